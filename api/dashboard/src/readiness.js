// The job's RL-readiness report (GET …/readiness): the verdict on the base model before training with its
// findings and remedies, the per-prompt pass histogram, and, after training, the comparison on the same prompts.
// Shown only for jobs that asked for a probe; refreshed as the event log grows (the report arrives as events).
import { useEffect, useState } from "preact/hooks";
import { api, jobsPath } from "./api.js";
import { ErrorNote, fmt, html } from "./util.js";

const VERDICT = { ready: "ready", weak_signal: "weak signal", not_ready: "not ready" };

function Histogram({ report }) {
  const top = Math.max(1, ...report.histogram);
  return html`<div class="histogram" data-testid="readiness-histogram"
      title="prompts by how many of their samples passed">
    ${report.histogram.map(
      (n, passed) => html`<div class="col" key=${passed}>
        <span class="n">${n}</span>
        <div class="bar" style=${`height: ${Math.round((60 * n) / top)}px`}></div>
        <span class="muted">${passed}/${report.samples_per_prompt}</span>
      </div>`,
    )}
  </div>`;
}

function summary(r) {
  return [
    `${r.prompts} prompts × ${r.samples_per_prompt} samples`,
    `mean reward ${fmt(r.mean_reward)}`,
    `grader errors ${fmt(100 * r.grader_error_rate, 1)}% (${fmt(r.grader_ms_per_sample, 1)} ms/sample)`,
    `completions ${fmt(r.completion_tokens_mean, 1)} tokens, p95 ${r.completion_tokens_p95} of ${r.max_completion_tokens}`,
    `cut off ${fmt(100 * r.truncated_share, 1)}%`,
  ].join(" · ");
}

export function Readiness({ job, version }) {
  const [state, setState] = useState(null);
  const [error, setError] = useState(null);
  const requested = Boolean(job.hyperparameters?.preflight);
  useEffect(() => {
    if (!requested) return;
    api(`${jobsPath(job.id)}/readiness`)
      .then((r) => (setState(r), setError(null)))
      .catch(setError);
  }, [job.id, version, requested]);
  if (!requested) return null;
  const before = state?.before;
  return html`<section class="card" data-testid="readiness">
    <h2>RL readiness ${before && html`<span class=${`badge verdict-${before.verdict}`} data-testid="readiness-verdict">
      ${VERDICT[before.verdict]}</span>`}</h2>
    <${ErrorNote} error=${error} />
    ${!before && html`<p class="muted">The worker probes the base model before training…</p>`}
    ${before && html`<div class="readiness">
      <${Histogram} report=${before} />
      <div>
        <p class="muted">${summary(before)}</p>
        <ul>${before.findings.map((f, i) => html`<li key=${i}>${f}</li>`)}</ul>
        ${state.dropped_rows.length > 0 && html`<p class="muted">${state.dropped_rows.length} prompts without signal
          left out of training</p>`}
        ${state.comparison && html`<p data-testid="readiness-comparison"><b>After training:</b>
          ${state.comparison.summary}</p>`}
      </div>
    </div>`}
  </section>`;
}
