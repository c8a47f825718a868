// Settings → Tools, pure: what a server's state line says, and which values of a pasted
// config to keep in the keyring. The pasted text is only read here to offer the secret
// switches; the core parses it again, and its word on what is wrong is the one shown.

import type { McpField, McpSecretField, McpServerView } from '../lib/protocol';

/** What the add field shows before anything is pasted: the shape Claude Desktop writes. */
export const PASTE_EXAMPLE = `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/you/Documents"]
    }
  }
}`;

/** "in 4 s", "in 2 min". */
function inTime(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  return s < 120 ? `in ${s} s` : `in ${Math.round(s / 60)} min`;
}

/** The line under a server's name: "Running · 12 tools", "Failed: … Trying again in 4 s." */
export function stateText(server: McpServerView, now: number): string {
  const state = server.state;
  switch (state.state) {
    case 'starting':
      return 'Starting…';
    case 'running': {
      const n = server.tools.length;
      return `Running · ${n} ${n === 1 ? 'tool' : 'tools'}`;
    }
    case 'failed':
      return state.retry_at === undefined
        ? `Failed: ${state.error}.`
        : `Failed: ${state.error}. Trying again ${inTime(state.retry_at - now)}.`;
    case 'disabled':
      return 'Turned off in mcp.json ("disabled": true).';
  }
}

/** One value of a pasted server, and whether it goes to the keyring. */
export interface PastedField {
  server: string;
  field: McpField;
  name: string;
  secret: boolean;
}

/** Names that usually hold a credential: those start switched to the keyring. */
export function looksSecret(name: string): boolean {
  return /token|secret|key|pass(word|wd)?|pwd|auth|credential|cookie|session/i.test(name);
}

/** The env and header values of a pasted config; `null` while it is not (yet) JSON. */
export function pastedFields(text: string): PastedField[] | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const top = value as Record<string, unknown>;
  const servers = (top.mcpServers ?? top) as Record<string, unknown>;
  if (!servers || typeof servers !== 'object') return null;
  const fields: PastedField[] = [];
  for (const [server, entry] of Object.entries(servers)) {
    if (!entry || typeof entry !== 'object') continue;
    const e = entry as Record<string, unknown>;
    for (const [key, field] of [
      ['env', 'env'],
      ['headers', 'header'],
    ] as const) {
      const map = e[key];
      if (!map || typeof map !== 'object') continue;
      for (const [name, v] of Object.entries(map as Record<string, unknown>)) {
        // Only plain text can move to the keyring; a reference already is there.
        if (typeof v === 'string') fields.push({ server, field, name, secret: looksSecret(name) });
      }
    }
  }
  return fields;
}

/** The switched-on fields, as the add op takes them. */
export function secretFields(fields: PastedField[]): McpSecretField[] {
  return fields.filter((f) => f.secret).map(({ server, field, name }) => ({ server, field, name }));
}
