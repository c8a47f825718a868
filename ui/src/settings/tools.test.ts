// Settings → Tools, pure: the state line of each server and the secret switches of a paste.
import { describe, expect, it } from 'vitest';
import type { McpServerView } from '../lib/protocol';
import { looksSecret, pastedFields, secretFields, stateText } from './tools';

const server = (patch: Partial<McpServerView>): McpServerView => ({
  name: 'everything',
  transport: 'stdio',
  target: 'npx -y @modelcontextprotocol/server-everything',
  state: { state: 'starting' },
  tools: [],
  trusted: false,
  timeout_secs: 60,
  stderr_tail: [],
  secrets: [],
  ...patch,
});

describe('a server state line', () => {
  it('says starting, running with its tool count, failed with the error and when it is tried again', () => {
    expect(stateText(server({}), 0)).toBe('Starting…');
    const tool = { name: 'echo', qualified_name: 'mcp__everything__echo', description: 'Echo', read_only: true };
    expect(stateText(server({ state: { state: 'running' }, tools: [tool] }), 0)).toBe('Running · 1 tool');
    expect(stateText(server({ state: { state: 'running' }, tools: [tool, tool] }), 0)).toBe('Running · 2 tools');
    expect(stateText(server({ state: { state: 'failed', error: 'exited during initialize (exit status 3)', retry_at: 4_200 } }), 0)).toBe(
      'Failed: exited during initialize (exit status 3). Trying again in 5 s.',
    );
    expect(stateText(server({ state: { state: 'failed', error: 'gave up' } }), 0)).toBe('Failed: gave up.');
  });
});

describe('a pasted config', () => {
  it('lists its env and header values, tokens switched to the keyring', () => {
    const fields = pastedFields(
      JSON.stringify({
        mcpServers: {
          github: { command: 'npx', env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_x', LOG_LEVEL: 'info' } },
          remote: { url: 'https://x.test/mcp', headers: { Authorization: 'Bearer y', 'X-Kept': { keyring: 'a' } } },
        },
      }),
    );
    expect(fields).toEqual([
      { server: 'github', field: 'env', name: 'GITHUB_PERSONAL_ACCESS_TOKEN', secret: true },
      { server: 'github', field: 'env', name: 'LOG_LEVEL', secret: false },
      { server: 'remote', field: 'header', name: 'Authorization', secret: true },
    ]);
    expect(secretFields(fields ?? [])).toEqual([
      { server: 'github', field: 'env', name: 'GITHUB_PERSONAL_ACCESS_TOKEN' },
      { server: 'remote', field: 'header', name: 'Authorization' },
    ]);
  });

  it('reads the servers map alone, and nothing while the text is not JSON yet', () => {
    expect(pastedFields('{"a": {"command": "x", "env": {"API_KEY": "k"}}}')).toEqual([
      { server: 'a', field: 'env', name: 'API_KEY', secret: true },
    ]);
    expect(pastedFields('{"mcpServers": {')).toBeNull();
    expect(looksSecret('HOME')).toBe(false);
    expect(looksSecret('OPENAI_API_KEY')).toBe(true);
  });
});
