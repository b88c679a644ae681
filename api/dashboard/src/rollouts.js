// The rollout viewer: the completions of one step (the first sample_log_count the worker kept), grouped by
// prompt, each with its total and per-grader rewards and its advantage. Follows the newest step unless the
// user picks one.
import { useState } from "preact/hooks";
import { fmt, html } from "./util.js";

function Prompt({ prompt }) {
  if (Array.isArray(prompt)) {
    return html`<div class="prompt">
      ${prompt.map((m, i) => html`<div key=${i}><b>${m.role}:</b> ${typeof m.content === "string" ? m.content : JSON.stringify(m.content)}</div>`)}
    </div>`;
  }
  return html`<div class="prompt">${typeof prompt === "string" ? prompt : JSON.stringify(prompt)}</div>`;
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

export function Rollouts({ samples }) {
  const steps = [...samples.keys()].sort((a, b) => a - b);
  const [picked, setPicked] = useState(null); // null: follow the newest step
  const [open, setOpen] = useState(true);
  if (!steps.length) {
    return html`<section class="card" data-testid="rollouts"><h2>Rollouts</h2>
      <p class="muted">No rollouts yet: they arrive with each step's metrics (sample_log_count).</p></section>`;
  }
  const step = picked !== null && samples.has(picked) ? picked : steps[steps.length - 1];
  const graderNames = [...new Set(samples.get(step).flatMap((s) => Object.keys(s.rewards || {})))];
  return html`<section class="card" data-testid="rollouts">
    <div class="row-between">
      <h2>Rollouts <span class="muted small">step ${step}: ${samples.get(step).length} completions kept</span></h2>
      <div class="controls"><label>Step
        <select data-testid="rollout-step" value=${String(step)} onChange=${(e) => {
          const v = Number(e.target.value);
          setPicked(v === steps[steps.length - 1] ? null : v);
        }}>
          ${steps.map((s) => html`<option key=${s} value=${String(s)}>${s}${s === steps[steps.length - 1] ? " (latest)" : ""}</option>`)}
        </select>
      </label>
      <button class="small" onClick=${() => setOpen(!open)} data-testid="rollouts-toggle">${open ? "Hide" : "Show"}</button>
      </div>
    </div>
    ${open &&
    groups(samples.get(step)).map(
      (g, i) => html`<div class="group" key=${i} data-testid="rollout-group">
        <${Prompt} prompt=${g.prompt} />
        <table class="table completions">
          <thead><tr><th>Completion</th><th>Reward</th>${graderNames.map((n) => html`<th key=${n}>${n}</th>`)}<th>Advantage</th><th>Tokens</th></tr></thead>
          <tbody>
            ${[...g.items]
              .sort((a, b) => (b.reward ?? -Infinity) - (a.reward ?? -Infinity))
              .map(
                (s, j) => html`<tr key=${j}>
                  <td><pre class="completion">${s.completion}</pre></td>
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
