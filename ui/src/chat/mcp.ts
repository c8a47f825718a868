// MCP tool calls in the chat: the model calls a server's tool as `mcp__<server>__<tool>`;
// the card shows the tool by its own name with its server beside it.

/** `{server, tool}` of an MCP tool's name; null for a built-in tool. */
export function mcpToolName(name: string): { server: string; tool: string } | null {
  if (!name.startsWith('mcp__')) return null;
  const rest = name.slice('mcp__'.length);
  const split = rest.indexOf('__');
  if (split <= 0 || split + 2 >= rest.length) return null;
  return { server: rest.slice(0, split), tool: rest.slice(split + 2) };
}
