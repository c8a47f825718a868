import { describe, expect, it } from 'vitest';
import type { SettingsView } from '../lib/protocol';
import {
  available,
  back,
  choiceOf,
  choose,
  formForChoice,
  problems,
  start,
  submission,
  wantsKey,
  type Walkthrough,
} from './welcome';

/** What a fresh install reports: Anthropic's defaults and no key. */
const fresh: SettingsView = {
  provider: { kind: 'anthropic', base_url: 'https://api.anthropic.com', model: 'claude-sonnet-4-5', max_tokens: 4096 },
  api_key_set: false,
  key_storage: 'none',
  env_overrides: [],
  warnings: [],
};

const withKey = (w: Walkthrough, apiKey: string): Walkthrough => ({ ...w, form: { ...w.form, apiKey } });

describe('first-run walkthrough', () => {
  it('starts at the choice, with the saved kind marked', () => {
    const w = start(fresh);
    expect(w.step).toBe('choose');
    expect(w.choice).toBe('anthropic');
    expect(start({ ...fresh, provider: { ...fresh.provider, kind: 'openai', base_url: 'http://localhost:11434/v1' } }).choice).toBe(
      'ollama',
    );
  });

  it('fills in each choice’s defaults', () => {
    expect(formForChoice(fresh, 'anthropic')).toEqual({
      kind: 'anthropic',
      baseUrl: 'https://api.anthropic.com',
      model: 'claude-sonnet-4-5',
      maxTokens: '4096',
      contextWindow: '',
      apiKey: '',
    });
    expect(formForChoice(fresh, 'openai')).toMatchObject({ kind: 'openai', baseUrl: 'https://api.openai.com/v1', model: 'gpt-4o-mini' });
    expect(formForChoice(fresh, 'ollama')).toMatchObject({ kind: 'openai', baseUrl: 'http://localhost:11434/v1', model: 'llama3.2' });
  });

  it('keeps a URL and model saved before for the same choice', () => {
    const saved: SettingsView = {
      ...fresh,
      provider: { kind: 'openai', base_url: 'https://openrouter.ai/api/v1', model: 'qwen/qwen3-coder', max_tokens: 2048 },
    };
    expect(formForChoice(saved, 'openai')).toMatchObject({ baseUrl: 'https://openrouter.ai/api/v1', model: 'qwen/qwen3-coder', maxTokens: '2048' });
    // Ollama is another server: its own address, the model kept as the user's own.
    expect(formForChoice(saved, 'ollama')).toMatchObject({ baseUrl: 'http://localhost:11434/v1', model: 'qwen/qwen3-coder' });
    expect(formForChoice(saved, 'anthropic')).toMatchObject({ baseUrl: 'https://api.anthropic.com', model: 'claude-sonnet-4-5' });
  });

  it('leaves alone what the environment decides and offers only its kind', () => {
    const env: SettingsView = {
      ...fresh,
      provider: { kind: 'openai', base_url: 'http://gpu-box:8000/v1', model: 'served', max_tokens: 1024 },
      env_overrides: ['kind', 'base_url', 'model'],
    };
    expect(available(env, 'anthropic')).toBe(false);
    expect(available(env, 'openai')).toBe(true);
    expect(available(env, 'ollama')).toBe(true);
    expect(choose(env, start(env), 'anthropic')).toEqual(start(env));
    expect(formForChoice(env, 'ollama')).toMatchObject({ kind: 'openai', baseUrl: 'http://gpu-box:8000/v1', model: 'served' });
    expect(start({ ...env, env_overrides: ['kind'], provider: { ...env.provider, kind: 'anthropic' } }).choice).toBe('anthropic');
  });

  it('goes to the details and back', () => {
    const details = choose(fresh, start(fresh), 'ollama');
    expect(details.step).toBe('details');
    expect(details.choice).toBe('ollama');
    expect(back(details)).toEqual({ ...details, step: 'choose' });
    // A new choice starts the details again.
    expect(choose(fresh, back(withKey(details, 'typed')), 'openai').form.apiKey).toBe('');
  });

  it('asks for a key unless the server is on this computer or one is stored', () => {
    const anthropic = choose(fresh, start(fresh), 'anthropic');
    expect(wantsKey(anthropic)).toBe(true);
    expect(problems(fresh, anthropic)).toEqual({ apiKey: 'Paste your API key.' });
    expect(problems(fresh, withKey(anthropic, '  '))).toEqual({ apiKey: 'Paste your API key.' });
    expect(problems(fresh, withKey(anthropic, 'sk-1'))).toEqual({});
    expect(problems({ ...fresh, api_key_set: true }, anthropic)).toEqual({});

    const ollama = choose(fresh, start(fresh), 'ollama');
    expect(wantsKey(ollama)).toBe(false);
    expect(problems(fresh, ollama)).toEqual({});
    const lmStudio = choose(fresh, start(fresh), 'openai');
    const local = { ...lmStudio, form: { ...lmStudio.form, baseUrl: 'http://127.0.0.1:1234/v1' } };
    expect(problems(fresh, local)).toEqual({});
  });

  it('checks the address and the model', () => {
    const w = withKey(choose(fresh, start(fresh), 'openai'), 'sk-1');
    expect(problems(fresh, { ...w, form: { ...w.form, baseUrl: ' ', model: '' } })).toEqual({
      baseUrl: 'Enter the server’s address.',
      model: 'Enter the name of a model.',
    });
    expect(problems(fresh, { ...w, form: { ...w.form, baseUrl: 'api.openai.com' } })).toEqual({
      baseUrl: 'The address starts with http:// or https://.',
    });
  });

  it('sends the provider and the key, and no key for Ollama', () => {
    const w = withKey(choose(fresh, start(fresh), 'anthropic'), ' sk-ant ');
    expect(submission(fresh, w)).toEqual({
      provider: { kind: 'anthropic', base_url: 'https://api.anthropic.com', model: 'claude-sonnet-4-5', max_tokens: 4096 },
      apiKey: 'sk-ant',
    });
    const ollama = withKey(choose(fresh, start(fresh), 'ollama'), 'stale');
    expect(submission(fresh, ollama)).toEqual({
      provider: { kind: 'openai', base_url: 'http://localhost:11434/v1', model: 'llama3.2', max_tokens: 4096 },
      apiKey: null,
    });
    expect(submission(fresh, choose(fresh, start(fresh), 'openai'))).toEqual({ problems: { apiKey: 'Paste your API key.' } });
    const broken = { ...w, form: { ...w.form, maxTokens: '0' } };
    expect(submission(fresh, broken)).toEqual({ error: 'Max tokens must be a whole number of at least 1.' });
  });

  it('reads the choice from saved settings', () => {
    expect(choiceOf(fresh.provider)).toBe('anthropic');
    expect(choiceOf({ ...fresh.provider, kind: 'openai', base_url: 'https://api.openai.com/v1' })).toBe('openai');
    expect(choiceOf({ ...fresh.provider, kind: 'openai', base_url: 'http://127.0.0.1:11434/v1' })).toBe('ollama');
  });
});
