// Walking a flow (automations.md "Steps"): which step runs after which, and the cycles no answer
// or timer stops (refused at save by validateFlow, flow.ts). Pure.
import type { Step, StepType } from './flow-steps.js';

/** Steps after which the execution ends: nothing follows them. */
const TERMINAL: ReadonlySet<string> = new Set<StepType>(['end', 'handoff', 'agent']);

/**
 * The id of the step that runs after step `i` when it finishes normally: its `next`, else the
 * following step, else null (the flow ends `completed`).
 */
export function followingOf(steps: readonly { id: string | null; next?: string }[], i: number): string | null {
  return steps[i]?.next ?? steps[i + 1]?.id ?? null;
}

/** followingOf for a step of `steps` found by its id (a step not in the list: its `next`, or null). */
export function nextOf(step: Step, steps: readonly Step[]): string | null {
  const i = steps.findIndex((s) => s.id === step.id);
  return i === -1 ? (step.next ?? null) : followingOf(steps, i);
}

/** What the graph needs of a step: its id, type and the step ids it names. */
export interface Shape {
  id: string | null;
  type: StepType | null;
  next?: string;
  then?: string;
  else?: string;
  onError?: string;
  timeoutNext?: string;
}

/** Fields that name another step, by step type (`next` on every one). */
export const REFERENCES: Record<StepType, readonly (keyof Shape)[]> = {
  send: ['next'],
  ask: ['next', 'timeoutNext'],
  condition: ['next', 'then', 'else'],
  http: ['next', 'onError'],
  set_attribute: ['next'],
  wait: ['next'],
  stage: ['next'],
  agent: ['next'],
  handoff: ['next'],
  end: ['next'],
};

/**
 * The step ids step `i` can go to: none after end/handoff/agent; a condition's `then` and `else`
 * (each defaulting to the normal following step); an http step's `onError` and an ask's
 * `timeoutNext` besides the following step.
 */
function successors(shapes: readonly Shape[], i: number): string[] {
  const s = shapes[i];
  if (s.type === null || TERMINAL.has(s.type)) return [];
  const after = followingOf(shapes, i);
  const targets =
    s.type === 'condition'
      ? [s.then ?? after, s.else ?? after]
      : s.type === 'http'
        ? [after, s.onError]
        : s.type === 'ask'
          ? [after, s.timeoutNext]
          : [after];
  return targets.filter((t): t is string => typeof t === 'string');
}

/** Strongly connected components of a graph of `n` nodes (Tarjan; at most MAX_STEPS nodes, so recursion is fine). */
function stronglyConnected(n: number, edges: readonly number[][]): number[][] {
  const index = new Array<number>(n).fill(-1);
  const low = new Array<number>(n).fill(0);
  const onStack = new Array<boolean>(n).fill(false);
  const stack: number[] = [];
  const components: number[][] = [];
  let counter = 0;
  const visit = (v: number): void => {
    index[v] = low[v] = counter++;
    stack.push(v);
    onStack[v] = true;
    for (const w of edges[v]) {
      if (index[w] === -1) {
        visit(w);
        low[v] = Math.min(low[v], low[w]);
      } else if (onStack[w]) low[v] = Math.min(low[v], index[w]);
    }
    if (low[v] === index[v]) {
      const component: number[] = [];
      let w: number;
      do {
        w = stack.pop()!;
        onStack[w] = false;
        component.push(w);
      } while (w !== v);
      components.push(component);
    }
  };
  for (let v = 0; v < n; v++) if (index[v] === -1) visit(v);
  return components;
}

/**
 * Cycles no answer or timer stops (automations.md: "a cycle without an ask or wait in it"): the
 * components with a cycle of the graph without its ask and wait steps, each as the step indexes
 * in flow order. Leaving those steps out catches a loop that bypasses the ask of a bigger loop.
 */
export function cyclesWithoutPause(shapes: readonly Shape[]): number[][] {
  const idIndex = new Map<string, number>();
  shapes.forEach((s, i) => {
    if (s.id !== null && !idIndex.has(s.id)) idIndex.set(s.id, i);
  });
  const pauses = (i: number) => shapes[i].type === 'ask' || shapes[i].type === 'wait';
  const edges = shapes.map((_, i) =>
    pauses(i)
      ? []
      : successors(shapes, i)
          .map((id) => idIndex.get(id))
          .filter((j): j is number => j !== undefined && !pauses(j)),
  );
  return stronglyConnected(shapes.length, edges)
    .filter((c) => c.length > 1 || edges[c[0]].includes(c[0]))
    .map((c) => c.sort((a, b) => a - b))
    .sort((a, b) => a[0] - b[0]);
}
