// An MCP tool call's approval card: the server, the tool and the arguments it is called
// with, "Allow once" (nothing is run as a command), and "always" naming that one tool.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync, mount, unmount } from 'svelte';
import ApprovalCard from './ApprovalCard.svelte';
import { applyApprovalEvent, initialApprovals, KIND_LABEL, recordText, requestTitle, type Approval } from './state';
import type { EventEnvelope } from '../lib/protocol';

let mounted: Record<string, unknown>[] = [];

afterEach(() => {
  for (const m of mounted) unmount(m);
  mounted = [];
  document.body.innerHTML = '';
});

const asked: EventEnvelope = {
  id: 'ev1',
  ts: 10,
  session_id: 'main',
  scope: 'primary',
  source: 'agent',
  run_id: 'r1',
  type: 'approval_requested',
  approval_id: 'ap1',
  kind: 'mcp_call',
  command: 'mcp__github__create_issue',
  prefix: 'mcp__github__create_issue',
  outside_sandbox: false,
  env: [],
  parts: [],
  mcp: {
    server: 'github',
    tool: 'create_issue',
    arguments: '{\n  "title": "Crash on start",\n  "labels": ["bug"]\n}',
    read_only: false,
  },
};

function show(approval: Approval, onAnswer = vi.fn()): HTMLElement {
  const target = document.createElement('div');
  document.body.append(target);
  mounted.push(mount(ApprovalCard, { target, props: { approval, takeFocus: false, onAnswer } }));
  flushSync();
  return target;
}

const q = (root: HTMLElement, id: string) => root.querySelector(`[data-testid="${id}"]`);

describe('an MCP call waiting for approval', () => {
  it('shows the server, the tool and the arguments, and offers always for that tool only', () => {
    const approval = applyApprovalEvent(initialApprovals(), { ...asked, approval_id: 'a1' }).approvals[0];
    const onAnswer = vi.fn();
    const card = show(approval, onAnswer);
    expect(q(card, 'approval-card')?.querySelector('h3')?.textContent).toBe(requestTitle('mcp_call'));
    expect(q(card, 'approval-mcp-server')?.textContent).toBe('github');
    expect(q(card, 'approval-mcp-tool')?.textContent).toBe('create_issue');
    expect(q(card, 'approval-mcp-arguments')?.textContent).toBe(asked.type === 'approval_requested' ? asked.mcp?.arguments : '');
    expect(q(card, 'approval-command')).toBeNull();
    expect(q(card, 'approval-approve')?.textContent?.trim()).toBe('Allow once');
    const always = q(card, 'approval-always') as HTMLButtonElement;
    expect(always.textContent).toMatch(/Always allow\s+mcp__github__create_issue/);
    expect(always.title).toMatch(/whatever its arguments/);
    always.click();
    expect(onAnswer).toHaveBeenCalledWith('always');
  });

  it('says when the server marks the tool read-only, and records the answer in one line', () => {
    const approval = applyApprovalEvent(initialApprovals(), {
      ...asked,
      approval_id: 'a2',
      mcp: { server: 'everything', tool: 'echo', arguments: '{}', read_only: true },
    } as EventEnvelope).approvals[0];
    const card = show(approval);
    expect(q(card, 'approval-mcp')?.textContent).toMatch(/only reads/);
    expect(recordText({ ...approval, state: 'always' })).toBe('Always allowed mcp__github__create_issue');
    expect(KIND_LABEL.mcp_call).toBe('MCP tool');
  });
});
