// The first-run walkthrough's logic: the providers to choose from, the two steps (choose,
// then fill in), the form each choice starts with, and what must be filled in before a
// test or a save. Welcome.svelte draws it; the form's shape and conversions are form.ts's.

import type { ProviderKind, ProviderSettings, SettingsView } from '../lib/protocol';
import {
  apiKeyFromForm,
  DEFAULT_BASE_URL,
  DEFAULT_MODEL,
  formFromView,
  OLLAMA_BASE_URL,
  providerFromForm,
  type SettingsForm,
} from './form';

/** What the first step offers: Ollama is the OpenAI-compatible kind on this computer. */
export type Choice = 'anthropic' | 'openai' | 'ollama';

export interface ChoiceInfo {
  id: Choice;
  title: string;
  blurb: string;
}

export const CHOICES: readonly ChoiceInfo[] = [
  { id: 'anthropic', title: 'Anthropic', blurb: 'Claude models, with an API key from console.anthropic.com.' },
  {
    id: 'openai',
    title: 'OpenAI-compatible',
    blurb: 'OpenAI, OpenRouter, LM Studio, vLLM or any server that speaks the Chat Completions API.',
  },
  { id: 'ollama', title: 'Ollama (local)', blurb: 'Models running on this computer. No key, nothing leaves the machine.' },
];

/** A model Ollama users commonly have pulled; only a suggestion to edit. */
export const OLLAMA_MODEL = 'llama3.2';

export const KIND_OF: Record<Choice, ProviderKind> = { anthropic: 'anthropic', openai: 'openai', ollama: 'openai' };

export type Step = 'choose' | 'details';

export interface Walkthrough {
  step: Step;
  /** Null until the user picks one (or the saved settings suggest one). */
  choice: Choice | null;
  form: SettingsForm;
}

const overridden = (view: SettingsView, field: string) => view.env_overrides.includes(field);

/** Whether a choice fits what the environment fixed (VIGIL_PROVIDER rules out the other kind). */
export function available(view: SettingsView, choice: Choice): boolean {
  return !overridden(view, 'kind') || KIND_OF[choice] === view.provider.kind;
}

function isLocal(url: string): boolean {
  try {
    const host = new URL(url.trim()).hostname;
    return host === 'localhost' || host === '127.0.0.1' || host === '[::1]';
  } catch {
    return false;
  }
}

/** The choice the saved settings point at: an Ollama URL is Ollama. */
export function choiceOf(provider: ProviderSettings): Choice {
  if (provider.kind === 'anthropic') return 'anthropic';
  return /:11434(\/|$)/.test(provider.base_url) ? 'ollama' : 'openai';
}

export function start(view: SettingsView): Walkthrough {
  const suggested = choiceOf(view.provider);
  return { step: 'choose', choice: available(view, suggested) ? suggested : null, form: formFromView(view) };
}

const KNOWN_URLS = [...Object.values(DEFAULT_BASE_URL), OLLAMA_BASE_URL];
const KNOWN_MODELS = [...Object.values(DEFAULT_MODEL), OLLAMA_MODEL];

/**
 * The form a choice starts with: the choice's defaults, except fields the environment
 * decides and a URL or model the user saved before for the same kind.
 */
export function formForChoice(view: SettingsView, choice: Choice): SettingsForm {
  const saved = formFromView(view);
  const kind = overridden(view, 'kind') ? saved.kind : KIND_OF[choice];
  const sameKind = saved.kind === kind;
  const defaultUrl = choice === 'ollama' ? OLLAMA_BASE_URL : DEFAULT_BASE_URL[kind];
  const defaultModel = choice === 'ollama' ? OLLAMA_MODEL : DEFAULT_MODEL[kind];
  const keepUrl =
    overridden(view, 'base_url') ||
    (sameKind && choice === choiceOf(view.provider) && saved.baseUrl.trim() !== '' && !KNOWN_URLS.includes(saved.baseUrl.trim()));
  const keepModel =
    overridden(view, 'model') || (sameKind && saved.model.trim() !== '' && !KNOWN_MODELS.includes(saved.model.trim()));
  return {
    ...saved,
    kind,
    baseUrl: keepUrl ? saved.baseUrl : defaultUrl,
    model: keepModel ? saved.model : defaultModel,
  };
}

export function choose(view: SettingsView, w: Walkthrough, choice: Choice): Walkthrough {
  if (!available(view, choice)) return w;
  return { step: 'details', choice, form: formForChoice(view, choice) };
}

/** Back to the first step; the choice stays marked, the details are made again on the next choice. */
export function back(w: Walkthrough): Walkthrough {
  return { ...w, step: 'choose' };
}

/** Whether a key is needed: a server on this computer does without (one may still be given). */
export function wantsKey(w: Walkthrough): boolean {
  return w.choice !== 'ollama' && !isLocal(w.form.baseUrl);
}

export type Field = 'baseUrl' | 'model' | 'apiKey';
export type Problems = Partial<Record<Field, string>>;

/** What is missing or wrong, per field; empty when the details can be tested and saved. */
export function problems(view: SettingsView, w: Walkthrough): Problems {
  const out: Problems = {};
  const url = w.form.baseUrl.trim();
  if (url === '') out.baseUrl = 'Enter the server’s address.';
  else if (!/^https?:\/\/[^/\s]+/.test(url)) out.baseUrl = 'The address starts with http:// or https://.';
  if (w.form.model.trim() === '') out.model = 'Enter the name of a model.';
  if (wantsKey(w) && !view.api_key_set && w.form.apiKey.trim() === '') out.apiKey = 'Paste your API key.';
  return out;
}

export interface Submission {
  provider: ProviderSettings;
  /** Null keeps the stored key (or, for Ollama, asks for none). */
  apiKey: string | null;
}

/** What Test and Save send, or the first thing in the way. */
export function submission(view: SettingsView, w: Walkthrough): Submission | { problems: Problems } | { error: string } {
  const found = problems(view, w);
  if (Object.keys(found).length > 0) return { problems: found };
  const provider = providerFromForm(w.form);
  if ('error' in provider) return provider;
  return { provider, apiKey: w.choice === 'ollama' ? null : apiKeyFromForm(w.form) };
}
