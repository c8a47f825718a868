import { describe, expect, it } from 'vitest';
import type { SettingsView } from '../lib/protocol';
import {
  apiKeyFromForm,
  formFromView,
  keyPlaceholder,
  keyStatus,
  looksConfigured,
  providerFromForm,
  providerSummary,
  switchKind,
  type SettingsForm,
} from './form';

const view: SettingsView = {
  provider: { kind: 'anthropic', base_url: 'https://api.anthropic.com', model: 'claude-sonnet-4-5', max_tokens: 4096 },
  api_key_set: true,
  key_storage: 'keyring',
  env_overrides: [],
  warnings: [],
};

describe('settings form', () => {
  it('switches URL and model when they are still the other kind’s defaults', () => {
    const form = formFromView(view);
    expect(switchKind(form, 'openai')).toEqual({
      ...form,
      kind: 'openai',
      baseUrl: 'https://api.openai.com/v1',
      model: 'gpt-4o-mini',
    });
  });

  it('keeps a URL and model the user typed', () => {
    const form: SettingsForm = { kind: 'openai', baseUrl: 'http://localhost:11434/v1', model: 'llama3.2', maxTokens: '1024', contextWindow: '', apiKey: '' };
    expect(switchKind(form, 'anthropic')).toEqual({ ...form, kind: 'anthropic' });
  });

  it('validates max tokens and trims fields', () => {
    const form = { ...formFromView(view), baseUrl: ' https://api.anthropic.com ', maxTokens: '0' };
    expect(providerFromForm(form)).toEqual({ error: 'Max tokens must be a whole number of at least 1.' });
    expect(providerFromForm({ ...form, maxTokens: '2048' })).toEqual({ ...view.provider, max_tokens: 2048 });
  });

  it('sends a context window only when one is given, and validates it', () => {
    const form = formFromView(view);
    expect(form.contextWindow).toBe('');
    expect(providerFromForm(form)).toEqual(view.provider);
    expect('context_window' in (providerFromForm(form) as object)).toBe(false);
    expect(providerFromForm({ ...form, contextWindow: ' 32,000 ' })).toEqual({ ...view.provider, context_window: 32000 });
    for (const bad of ['0', '-5', '1.5', 'lots']) {
      expect(providerFromForm({ ...form, contextWindow: bad })).toEqual({
        error: 'Context window must be a whole number of tokens of at least 1, or empty for the default.',
      });
    }
    const saved = { ...view, provider: { ...view.provider, context_window: 8192 } };
    expect(formFromView(saved).contextWindow).toBe('8192');
  });

  it('keeps the stored key when the field is empty', () => {
    expect(apiKeyFromForm(formFromView(view))).toBeNull();
    expect(apiKeyFromForm({ ...formFromView(view), apiKey: ' sk-1 ' })).toBe('sk-1');
  });

  it('describes the key and provider', () => {
    expect(keyPlaceholder(view)).toBe('Stored in the system keyring — leave empty to keep it');
    expect(keyPlaceholder({ ...view, api_key_set: false, key_storage: 'none' })).toBe('Paste your API key');
    expect(keyStatus({ ...view, key_storage: 'file' })).toBe('Key in private file');
    expect(providerSummary(view.provider)).toBe('Anthropic · claude-sonnet-4-5');
    expect(providerSummary({ kind: 'openai', base_url: 'http://localhost:11434/v1', model: 'llama3.2', max_tokens: 1 })).toBe(
      'Ollama · llama3.2',
    );
  });

  it('treats a local server without a key as configured', () => {
    expect(looksConfigured({ ...view, api_key_set: false })).toBe(false);
    expect(
      looksConfigured({ ...view, api_key_set: false, provider: { ...view.provider, base_url: 'http://localhost:11434/v1' } }),
    ).toBe(true);
  });
});
