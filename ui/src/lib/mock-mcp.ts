// The `?mock` backend's MCP servers, after vigil-core `mcp/`: two servers (one running with
// its tools, one failed with its stderr), and the Settings → Tools commands working on them
// in memory. A pasted config is read as the core reads it, roughly: it is a preview, and the
// core's own parser decides in the app. Only `mock.ts` imports this.

import type { Event, McpSecretField, McpServerView, McpView } from './protocol';

type Emit = (sessionId: string | null, runId: string | null, event: Event) => void;

const EVERYTHING_TOOLS = [
  ['echo', 'Echoes back the input string'],
  ['get-sum', 'Returns the sum of two numbers'],
  ['get-tiny-image', 'Returns a tiny MCP logo image'],
  ['trigger-long-running-operation', 'Demonstrates a long running operation with progress updates'],
].map(([name, description]) => ({
  name,
  qualified_name: `mcp__everything__${name}`,
  description: `${description} (MCP server everything)`,
  read_only: true,
}));

export function createMockMcp(emit: Emit) {
  const servers = new Map<string, McpServerView>([
    [
      'everything',
      {
        name: 'everything',
        transport: 'stdio',
        target: 'npx -y @modelcontextprotocol/server-everything',
        state: { state: 'running' },
        tools: EVERYTHING_TOOLS,
        trusted: false,
        timeout_secs: 60,
        stderr_tail: [],
        secrets: [],
      },
    ],
    [
      'github',
      {
        name: 'github',
        transport: 'stdio',
        target: 'npx -y @modelcontextprotocol/server-github',
        state: { state: 'failed', error: 'exited during initialize (exit status 1); gave up after 5 tries in a row' },
        tools: [],
        trusted: false,
        timeout_secs: 60,
        stderr_tail: ['GitHub MCP Server running on stdio', 'Error: GITHUB_PERSONAL_ACCESS_TOKEN is not set'],
        secrets: ['GITHUB_PERSONAL_ACCESS_TOKEN'],
      },
    ],
  ]);

  const view = (): McpView => ({
    servers: [...servers.values()].sort((a, b) => a.name.localeCompare(b.name)),
    path: '/home/you/.local/share/dev.vigil.desktop/mcp.json',
  });

  const changed = (): McpView => {
    const v = view();
    emit(null, null, { type: 'mcp_servers_changed', mcp: v });
    return v;
  };

  function named(name: string): McpServerView {
    const server = servers.get(name);
    if (!server) throw { code: 'invalid_mcp', message: `No MCP server is named "${name}".` };
    return server;
  }

  function start(name: string): void {
    setTimeout(() => {
      const server = servers.get(name);
      if (!server) return;
      servers.set(name, { ...server, state: { state: 'running' }, tools: [] });
      changed();
    }, 900);
  }

  return {
    commands: {
      get_mcp: () => view(),
      add_mcp_servers: (args: Record<string, unknown>) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(String(args.json));
        } catch (e) {
          throw { code: 'invalid_mcp', field: 'json', message: `That is not valid JSON: ${(e as Error).message}.` };
        }
        const top = (parsed ?? {}) as Record<string, unknown>;
        const map = (top.mcpServers ?? top) as Record<string, Record<string, unknown>>;
        const secret = (args.secret ?? []) as McpSecretField[];
        if (Object.keys(map).length === 0) throw { code: 'invalid_mcp', field: 'json', message: 'The pasted config names no server.' };
        for (const [name, entry] of Object.entries(map)) {
          const command = typeof entry.command === 'string' ? entry.command : null;
          const url = typeof entry.url === 'string' ? entry.url : null;
          if (!command && !url) {
            throw { code: 'invalid_mcp', field: 'json', message: `Server "${name}": it needs a \`command\` (a program to start) or a \`url\` (an HTTP server).` };
          }
          const args_ = Array.isArray(entry.args) ? entry.args.map(String) : [];
          servers.set(name, {
            name,
            transport: url ? 'http' : 'stdio',
            target: url ?? [command, ...args_].join(' '),
            state: { state: 'starting' },
            tools: [],
            trusted: entry.trusted === true,
            timeout_secs: typeof entry.timeout === 'number' ? entry.timeout : 60,
            stderr_tail: [],
            secrets: secret.filter((s) => s.server === name).map((s) => s.name),
          });
          start(name);
        }
        return changed();
      },
      remove_mcp_server: (args: Record<string, unknown>) => {
        named(String(args.name));
        servers.delete(String(args.name));
        return changed();
      },
      set_mcp_server_trusted: (args: Record<string, unknown>) => {
        const server = named(String(args.name));
        servers.set(server.name, { ...server, trusted: args.trusted === true });
        return changed();
      },
      restart_mcp_server: (args: Record<string, unknown>) => {
        const server = named(String(args.name));
        servers.set(server.name, { ...server, state: { state: 'starting' }, stderr_tail: [] });
        start(server.name);
        return changed();
      },
    },
  };
}
