// Settings → Tools' state: the MCP servers as the core last described them, kept current by
// `mcp_servers_changed` events, and the edits (add, remove, trusted, restart), each of which
// answers with the new view.

import * as ipc from '../lib/ipc';
import type { EventEnvelope, McpSecretField, McpView } from '../lib/protocol';

export class ToolsStore {
  view = $state<McpView | null>(null);
  loadError = $state<string | null>(null);

  /** Loads the view and follows the core's changes; returns the unsubscribe. */
  start(): () => void {
    let unlisten: ipc.Unlisten | null = null;
    let stopped = false;
    void ipc
      .onEvent((e) => this.apply(e))
      .then((u) => (stopped ? u() : (unlisten = u)))
      .catch(() => {});
    void this.load();
    return () => {
      stopped = true;
      unlisten?.();
    };
  }

  async load(): Promise<void> {
    try {
      this.view = await ipc.getMcp();
      this.loadError = null;
    } catch (e) {
      this.loadError = `Could not load the MCP servers: ${ipc.toCommandError(e).message}`;
    }
  }

  apply(event: EventEnvelope): void {
    if (event.type === 'mcp_servers_changed') this.view = event.mcp;
  }

  async add(json: string, secret: McpSecretField[]): Promise<void> {
    this.view = await ipc.addMcpServers(json, secret);
  }

  async remove(name: string): Promise<void> {
    this.view = await ipc.removeMcpServer(name);
  }

  async setTrusted(name: string, trusted: boolean): Promise<void> {
    this.view = await ipc.setMcpServerTrusted(name, trusted);
  }

  async restart(name: string): Promise<void> {
    this.view = await ipc.restartMcpServer(name);
  }
}
