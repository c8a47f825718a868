// Pure helpers behind the settings pane: defaults per provider kind, the form's shape, and
// the labels the pane and the status bar share.

import type { KeyStorage, ProviderKind, ProviderSettings, SettingsView } from '../lib/protocol';

export const DEFAULT_BASE_URL: Record<ProviderKind, string> = {
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com/v1',
};

export const DEFAULT_MODEL: Record<ProviderKind, string> = {
  anthropic: 'claude-sonnet-4-5',
  openai: 'gpt-4o-mini',
};

export const OLLAMA_BASE_URL = 'http://localhost:11434/v1';

export const KIND_LABEL: Record<ProviderKind, string> = {
  anthropic: 'Anthropic',
  openai: 'OpenAI-compatible',
};

/** The context window the core assumes when the field is empty (`ProviderKind::default_context_window`). */
export const DEFAULT_CONTEXT_WINDOW: Record<ProviderKind, number> = {
  anthropic: 200_000,
  openai: 128_000,
};

/** What the form edits. Numbers are strings because that is what the inputs hold. */
export interface SettingsForm {
  kind: ProviderKind;
  baseUrl: string;
  model: string;
  maxTokens: string;
  /** Empty: the kind's default. */
  contextWindow: string;
  apiKey: string;
}

export function formFromView(view: SettingsView): SettingsForm {
  const p = view.provider;
  return {
    kind: p.kind,
    baseUrl: p.base_url,
    model: p.model,
    maxTokens: String(p.max_tokens),
    contextWindow: p.context_window === undefined ? '' : String(p.context_window),
    apiKey: '',
  };
}

/** A positive whole number, or null. */
function positiveInt(raw: string): number | null {
  const n = Number(raw);
  return /^\d+$/.test(raw) && Number.isSafeInteger(n) && n >= 1 ? n : null;
}

/**
 * Changes the kind. A URL or model still at the other kind's default (or empty) follows the
 * new kind; anything the user typed (an Ollama URL, a model of their own) stays.
 */
export function switchKind(form: SettingsForm, kind: ProviderKind): SettingsForm {
  if (kind === form.kind) return form;
  const old = form.kind;
  const urlFollows = form.baseUrl.trim() === '' || form.baseUrl.trim() === DEFAULT_BASE_URL[old];
  const modelFollows = urlFollows || form.model.trim() === '' || form.model.trim() === DEFAULT_MODEL[old];
  return {
    ...form,
    kind,
    baseUrl: urlFollows ? DEFAULT_BASE_URL[kind] : form.baseUrl,
    model: modelFollows ? DEFAULT_MODEL[kind] : form.model,
  };
}

/** The settings to send; numbers that are not positive whole numbers come back as an error. */
export function providerFromForm(form: SettingsForm): ProviderSettings | { error: string } {
  const maxTokens = positiveInt(form.maxTokens.trim());
  if (maxTokens === null) return { error: 'Max tokens must be a whole number of at least 1.' };
  const provider: ProviderSettings = {
    kind: form.kind,
    base_url: form.baseUrl.trim(),
    model: form.model.trim(),
    max_tokens: maxTokens,
  };
  const rawWindow = form.contextWindow.trim().replace(/[,_\s]/g, '');
  if (rawWindow === '') return provider;
  const contextWindow = positiveInt(rawWindow);
  if (contextWindow === null) {
    return { error: 'Context window must be a whole number of tokens of at least 1, or empty for the default.' };
  }
  return { ...provider, context_window: contextWindow };
}

/** The API key to send: null keeps the stored one. */
export function apiKeyFromForm(form: SettingsForm): string | null {
  const key = form.apiKey.trim();
  return key === '' ? null : key;
}

const STORAGE_PLACE: Record<KeyStorage, string> = {
  keyring: 'the system keyring',
  file: 'a private file',
  environment: 'an environment variable',
  none: 'nowhere',
};

export function keyPlaceholder(view: SettingsView): string {
  if (!view.api_key_set) return 'Paste your API key';
  if (view.key_storage === 'environment') return 'Set by an environment variable — leave empty to use it';
  return `Stored in ${STORAGE_PLACE[view.key_storage]} — leave empty to keep it`;
}

/** Short form for the status bar. */
export function keyStatus(view: SettingsView): string {
  if (!view.api_key_set) return 'No API key';
  switch (view.key_storage) {
    case 'keyring':
      return 'Key in keyring';
    case 'file':
      return 'Key in private file';
    case 'environment':
      return 'Key from environment';
    case 'none':
      return 'No API key';
  }
}

/** "Anthropic · claude-sonnet-4-5", "Ollama · llama3.2". */
export function providerSummary(p: ProviderSettings): string {
  let name = KIND_LABEL[p.kind];
  if (p.kind === 'openai') {
    if (p.base_url.trim() === DEFAULT_BASE_URL.openai) name = 'OpenAI';
    else if (/:11434(\/|$)/.test(p.base_url)) name = 'Ollama';
  }
  return `${name} · ${p.model}`;
}

/** Whether a turn could plausibly run: a key, or a local server that needs none. */
export function looksConfigured(view: SettingsView): boolean {
  if (view.api_key_set) return true;
  try {
    const host = new URL(view.provider.base_url).hostname;
    return host === 'localhost' || host === '127.0.0.1' || host === '[::1]';
  } catch {
    return false;
  }
}

/** Fields the environment decides (`VIGIL_PROVIDER`, `VIGIL_BASE_URL`, `VIGIL_MODEL`). */
export const ENV_VAR: Record<string, string> = {
  kind: 'VIGIL_PROVIDER',
  base_url: 'VIGIL_BASE_URL',
  model: 'VIGIL_MODEL',
};
