// The rollout viewer: the completions of one step (the first sample_log_count the worker kept), grouped by
// prompt, each with its total and per-grader rewards and its advantage. A multi-turn episode (a job with an
// environment) shows turn by turn: the model's turns (trained on) and the tool / environment text between them
// (masked out of the loss), each marked. Follows the newest step unless the
// user picks one (a number, or ◀ ▶: a long job has too many steps for a list).
import { useEffect, useRef, useState } from "preact/hooks";
import { api, jobsPath } from "./api.js";
import { ErrorNote, fmt, html } from "./util.js";

function Prompt({ prompt }) {
  if (Array.isArray(prompt)) {
    return html`<div class="prompt">
      ${prompt.map((m, i) => html`<div key=${i}><b>${m.role}:</b> ${typeof m.content === "string" ? m.content : JSON.stringify(m.content)}</div>`)}
    </div>`;
  }
  return html`<div class="prompt">${typeof prompt === "string" ? prompt : JSON.stringify(prompt)}</div>`;
}

const SPAN_LABEL = { model: "model · trained", tool: "tool · masked", user: "environment · masked" };

// one episode, span by span: what carries loss and what is only context
function Trajectory({ sample }) {
  return html`<div class="trajectory" data-testid="trajectory">
    ${sample.trajectory.map(
      (span, i) => html`<div key=${i} class=${`span span-${span.kind}`} data-testid="trajectory-span"
        data-kind=${span.kind} data-trained=${String(span.trained)}>
        <span class="span-label">${SPAN_LABEL[span.kind] || span.kind} · ${span.tokens} tokens</span>
        <pre class="completion">${span.text}</pre>
      </div>`,
    )}
    ${sample.ended && html`<div class="muted small">episode ended: ${sample.ended}</div>`}
  </div>`;
}

function groups(samples) {
  const out = new Map();
  for (const s of samples) {
    const k = JSON.stringify(s.prompt);
    if (!out.has(k)) out.set(k, { prompt: s.prompt, items: [] });
    out.get(k).items.push(s);
  }
  return [...out.values()];
}

// one step's rollouts, read from …/samples?step=N (the event stream is replayed without them); a step's
// rollouts never change, so each is read once
function useSamples(jobId, step) {
  const cache = useRef(new Map());
  const [, setTick] = useState(0);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (step === null || cache.current.has(step)) return undefined;
    let live = true;
    // following the newest step of a fast job: read it once it has stayed newest for a moment
    const t = setTimeout(() => {
      api(`${jobsPath(jobId)}/samples?step=${step}`)
        .then((r) => {
          cache.current.set(step, r.data);
          if (live) (setError(null), setTick((n) => n + 1));
        })
        .catch((e) => live && setError(e));
    }, 300);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [jobId, step]);
  // until a new step's rollouts arrive, the last ones shown stay (no flash of "Loading…" on every step)
  const shown = useRef({ step: null, samples: null });
  if (step !== null && cache.current.has(step)) shown.current = { step, samples: cache.current.get(step) };
  return { ...shown.current, loading: step !== null && !cache.current.has(step), error };
}

export function Rollouts({ jobId, latest }) {
  const [picked, setPicked] = useState(null); // null: follow the newest step
  const [open, setOpen] = useState(true);
  // what the user is typing in the step box, kept until Enter or blur: the box is re-rendered by every new step
  // and every poll of the job, which would otherwise put the shown step back mid-typing
  const [draft, setDraft] = useState(null);
  const step = picked !== null && latest !== null ? Math.min(Math.max(1, picked), latest) : latest;
  const { step: shownStep, samples, loading, error } = useSamples(jobId, open ? step : null);
  if (latest === null) {
    return html`<section class="card" data-testid="rollouts"><h2>Rollouts</h2>
      <p class="muted">No rollouts yet: each step keeps its first sample_log_count completions.</p></section>`;
  }
  const go = (s) => (setDraft(null), setPicked(s >= latest ? null : Math.max(1, s)));
  const graderNames = [...new Set((samples || []).flatMap((s) => Object.keys(s.rewards || {})))];
  return html`<section class="card" data-testid="rollouts">
    <div class="row-between">
      <h2>Rollouts <span class="muted small">${samples && `step ${shownStep}: ${samples.length} completions kept`}
        ${loading && ` (reading step ${step}…)`}</span></h2>
      <div class="controls">
        <button class="small" onClick=${() => go(step - 1)} disabled=${step <= 1} title="previous step">◀</button>
        <label>Step
          <input type="number" class="step-input" data-testid="rollout-step" min="1" max=${latest}
            value=${draft ?? step} onInput=${(e) => setDraft(e.target.value)}
            onChange=${(e) => go(Number(e.target.value) || latest)} />
        </label>
        <span class="muted small">of ${latest}</span>
        <button class="small" onClick=${() => go(step + 1)} disabled=${step >= latest} title="next step">▶</button>
        <button class="small" data-testid="rollouts-latest" onClick=${() => go(latest)} disabled=${picked === null}>
          Latest</button>
        <button class="small" onClick=${() => setOpen(!open)} data-testid="rollouts-toggle">${open ? "Hide" : "Show"}</button>
      </div>
    </div>
    <${ErrorNote} error=${error} />
    ${open && samples === null && !error && html`<p class="muted">Loading…</p>`}
    ${open && samples?.length === 0 && html`<p class="muted">This step kept no rollouts (sample_log_count = 0).</p>`}
    ${open &&
    samples &&
    groups(samples).map(
      (g, i) => html`<div class="group" key=${`${shownStep}-${i}`} data-testid="rollout-group" data-step=${shownStep}>
        <${Prompt} prompt=${g.prompt} />
        <table class="table completions">
          <thead><tr><th>Completion</th><th>Reward</th>${graderNames.map((n) => html`<th key=${n}>${n}</th>`)}<th>Advantage</th><th>Tokens</th></tr></thead>
          <tbody>
            ${[...g.items]
              .sort((a, b) => (b.reward ?? -Infinity) - (a.reward ?? -Infinity))
              .map(
                (s, j) => html`<tr key=${j}>
                  <td>${s.trajectory ? html`<${Trajectory} sample=${s} />` : html`<pre class="completion">${s.completion}</pre>`}</td>
                  <td>${fmt(s.reward)}</td>
                  ${graderNames.map((n) => html`<td key=${n}>${fmt(s.rewards?.[n])}</td>`)}
                  <td class=${s.advantage > 0 ? "pos" : s.advantage < 0 ? "neg" : ""}>${fmt(s.advantage)}</td>
                  <td>${s.completion_tokens ?? "–"}</td>
                </tr>`,
              )}
          </tbody>
        </table>
      </div>`,
    )}
  </section>`;
}
