// The processes for the components: the list (see state.ts for the rules), each process's
// output kept in a bounded byte buffer from the moment the window starts — whether or not
// the panel is open — and handed to whichever terminal shows it, and the panel's ops (run,
// type, kill, resize). One store for the window.

import * as ipc from '../lib/ipc';
import type { EventEnvelope, Op } from '../lib/protocol';
import { decodeBase64, joinReplay, OutputBuffer } from './output';
import {
  applyProcessEvent,
  forgotten,
  initialProcesses,
  runningCount,
  sortedProcesses,
  USER_OWNER,
  withListed,
  type ProcessesState,
} from './state';

/** Where a process's output goes: a terminal on screen. */
export interface OutputSink {
  /** Everything so far: start over with it. */
  reset(bytes: Uint8Array): void;
  /** More output. */
  append(bytes: Uint8Array): void;
}

/** How long a command started from the panel waits for its process to appear. */
const START_TIMEOUT_MS = 10_000;

export class ProcessesStore {
  /** Replaced wholesale by the reducer, so `raw` is enough. */
  state = $state.raw<ProcessesState>(initialProcesses());
  /** Newest first. */
  list = $derived(sortedProcesses(this.state));
  /** For the header's count. */
  running = $derived(runningCount(this.state));
  /** The panel is showing. */
  open = $state(false);
  /** The process shown in the terminal. */
  selected = $state<string | null>(null);
  /** The last thing that went wrong with the panel's own requests. */
  error = $state<string | null>(null);
  /** A command started from the panel whose process has not appeared yet. */
  starting = $state<string | null>(null);

  #outputs = new Map<string, OutputBuffer>();
  #sinks = new Map<string, Set<OutputSink>>();
  /** Processes whose replay is being fetched, with the output that arrived meanwhile. */
  #replaying = new Map<string, Uint8Array[]>();
  #inputs = new Map<string, { sending: boolean; queued: string }>();
  #startTimer: ReturnType<typeof setTimeout> | null = null;

  /** Registers the event listener first, so nothing is missed, then loads the list. */
  async start(): Promise<ipc.Unlisten> {
    const { unlisten, error } = await ipc.startStore(
      'list_processes',
      (list) => this.#setState(withListed(this.state, list)),
      (event) => this.onEvent(event),
    );
    // Without a backend the chat says so; a failed list is worth a line in the panel.
    if (error !== null && error.code !== 'not_ready') this.error = `Could not list the processes: ${error.message}`;
    return () => {
      unlisten();
      if (this.#startTimer !== null) clearTimeout(this.#startTimer);
    };
  }

  has(id: string): boolean {
    return this.state.byId.has(id);
  }

  /** The header's button; opening shows the newest running process (or the newest) if none is chosen. */
  toggle(): void {
    this.open = !this.open;
    if (this.open && (this.selected === null || !this.has(this.selected))) {
      this.selected = (this.list.find((p) => p.state === 'running') ?? this.list[0])?.id ?? null;
    }
  }

  /** Opens the panel on process `id` ("Open in Processes", a notification). */
  reveal(id: string): void {
    this.selected = id;
    this.open = true;
  }

  /** The bytes kept for `id` (a copy may be shared; do not modify it). */
  output(id: string): Uint8Array {
    return this.#outputs.get(id)?.bytes() ?? new Uint8Array(0);
  }

  /**
   * Connects a terminal to `id`: it gets everything kept so far, then each new piece. When
   * the window did not see the process start, the core's replay comes first. Returns the
   * disconnect.
   */
  attach(id: string, sink: OutputSink): () => void {
    let sinks = this.#sinks.get(id);
    if (!sinks) this.#sinks.set(id, (sinks = new Set()));
    sinks.add(sink);
    const buffer = this.#buffer(id, false);
    if (buffer.complete) sink.reset(buffer.bytes());
    else if (!this.#replaying.has(id)) void this.#replay(id, buffer);
    return () => {
      sinks.delete(sink);
      if (sinks.size === 0) this.#sinks.delete(id);
    };
  }

  /** Starts `command` as the user's own; the panel shows it once it is there. */
  async run(command: string): Promise<boolean> {
    const trimmed = command.trim();
    if (!trimmed) return false;
    this.starting = trimmed;
    this.error = null;
    if (this.#startTimer !== null) clearTimeout(this.#startTimer);
    this.#startTimer = setTimeout(() => {
      if (this.starting === trimmed) this.starting = null;
    }, START_TIMEOUT_MS);
    const ok = await this.#submit({ type: 'start_process', command: trimmed }, 'The command was not started');
    if (!ok && this.starting === trimmed) this.starting = null;
    return ok;
  }

  /**
   * Types into a process. Sends one at a time, joining what is typed meanwhile, so keys
   * arrive in order however the IPC schedules the calls.
   */
  input(id: string, data: string): void {
    let q = this.#inputs.get(id);
    if (!q) this.#inputs.set(id, (q = { sending: false, queued: '' }));
    q.queued += data;
    if (!q.sending) void this.#drainInput(id, q);
  }

  async kill(id: string): Promise<void> {
    await this.#submit({ type: 'process_kill', process_id: id }, 'Could not kill it');
  }

  async resize(id: string, cols: number, rows: number): Promise<void> {
    await this.#submit({ type: 'process_resize', process_id: id, cols, rows }, 'Could not resize its terminal');
  }

  /** Public for tests; the store's own listener calls it. */
  onEvent(event: EventEnvelope): void {
    switch (event.type) {
      case 'process_started': {
        // Seen starting: every byte of its output will come as events.
        this.#buffer(event.process.id, true);
        this.#setState(applyProcessEvent(this.state, event));
        if (this.starting !== null && event.process.owner === USER_OWNER && event.process.command === this.starting) {
          this.starting = null;
          this.reveal(event.process.id);
        }
        return;
      }
      case 'process_exited':
        this.#setState(applyProcessEvent(this.state, event));
        return;
      case 'process_output': {
        const bytes = decodeBase64(event.data_b64);
        this.#buffer(event.process_id, false).push(bytes);
        const during = this.#replaying.get(event.process_id);
        if (during) during.push(bytes);
        else for (const sink of this.#sinks.get(event.process_id) ?? []) sink.append(bytes);
        return;
      }
      case 'error':
        // The core reports a command it could not start this way (no id to match on).
        if (this.starting !== null && event.kind === 'invalid_op') {
          this.error = event.message;
          this.starting = null;
        }
        return;
    }
  }

  #buffer(id: string, complete: boolean): OutputBuffer {
    let buffer = this.#outputs.get(id);
    if (!buffer) this.#outputs.set(id, (buffer = new OutputBuffer(complete)));
    return buffer;
  }

  async #replay(id: string, buffer: OutputBuffer): Promise<void> {
    const during: Uint8Array[] = [];
    this.#replaying.set(id, during);
    try {
      const replay = decodeBase64(await ipc.processOutput(id));
      buffer.replace(joinReplay(replay, during));
    } catch {
      // Finished and swept by the core: what the window kept is all there is.
    }
    this.#replaying.delete(id);
    buffer.complete = true;
    const bytes = buffer.bytes();
    for (const sink of this.#sinks.get(id) ?? []) sink.reset(bytes);
  }

  #setState(next: ProcessesState): void {
    if (next === this.state) return;
    for (const id of forgotten(this.state, next)) {
      this.#outputs.delete(id);
      this.#inputs.delete(id);
      if (this.selected === id) this.selected = null;
    }
    this.state = next;
  }

  async #drainInput(id: string, q: { sending: boolean; queued: string }): Promise<void> {
    q.sending = true;
    while (q.queued !== '') {
      const data = q.queued;
      q.queued = '';
      if (!(await this.#submit({ type: 'process_input', process_id: id, data }, 'What you typed was not sent'))) q.queued = '';
    }
    q.sending = false;
  }

  async #submit(op: Op, failure: string): Promise<boolean> {
    try {
      await ipc.submit(op);
      return true;
    } catch (e) {
      this.error = `${failure}: ${ipc.toCommandError(e).message}`;
      return false;
    }
  }
}
