// Training runs of the training API (a user's own loop driven by the tinker SDK): the list beside the jobs, and a
// run's page with its curves as its calls and the client's reports make them (GET /v1/training_runs/{id}/metrics),
// and its checkpoints. Both refresh every few seconds (every 15 s in a hidden tab).
import { api } from "./api.js";
import { Chart } from "./charts.js";
import { ErrorNote, StatusBadge, ago, fmt, html, usePolled, when } from "./util.js";

const size = (n) => (n >= 1e6 ? `${fmt(n / 1e6, 1)} MB` : `${fmt(n / 1e3, 1)} kB`);
const runPath = (id = "") => `/v1/training_runs${id ? `/${encodeURIComponent(id)}` : ""}`;

export function RunsList() {
  const [page, error] = usePolled(() => api(`${runPath()}?limit=100`), []);
  const runs = page?.data;
  if (!error && runs?.length === 0) return null; // nobody wrote a loop yet: the jobs page stays as it was
  return html`<section data-testid="runs">
    <h2>Your own loops</h2>
    <p class="muted">Training clients of the training API (the tinker SDK): <a href="/docs" target="_blank"
      rel="noreferrer">/api/v1</a>.</p>
    <${ErrorNote} error=${error} />
    ${runs?.length > 0 &&
    html`<table class="table" data-testid="runs-table">
      <thead>
        <tr><th>Run</th><th>Model</th><th>State</th><th>Steps</th><th>Last call</th></tr>
      </thead>
      <tbody>
        ${runs.map(
          (r) => html`<tr key=${r.id} data-run-id=${r.id}>
            <td><a href=${`#/runs/${encodeURIComponent(r.id)}`}>${r.id}</a></td>
            <td>${r.base_model} <span class="muted">rank ${r.lora_rank}</span></td>
            <td><${StatusBadge} status=${r.status} /></td>
            <td>${r.steps}</td>
            <td title=${new Date(r.last_request_at * 1000).toLocaleString()}>${ago(r.last_request_at)}</td>
          </tr>`,
        )}
      </tbody>
    </table>`}
  </section>`;
}

function curves(rows) {
  const steps = rows.map((r) => r.step);
  const col = (f) => rows.map((r) => (typeof f(r) === "number" && Number.isFinite(f(r)) ? f(r) : null));
  const reported = [...new Set(rows.flatMap((r) => Object.keys(r.reported || {})))].sort();
  return html`<div class="charts">
    <${Chart} id="run-loss" title="Loss per token" steps=${steps}
      series=${[{ label: "loss / token", values: col((r) => r.loss_per_token) }]} />
    <${Chart} id="run-grad" title="Gradient norm" steps=${steps}
      series=${[{ label: "grad norm", values: col((r) => r.grad_norm) }]} />
    ${reported.map(
      (k) => html`<${Chart} key=${k} id=${`run-reported-${k}`} title=${`${k} (reported)`} steps=${steps}
        series=${[{ label: k, values: col((r) => r.reported?.[k]) }]} />`,
    )}
  </div>
  ${reported.length === 0 &&
  html`<p class="muted">Report your loop's reward to draw it here: POST ${"{"}"step": n, "metrics": ${"{"}"reward":
    r}} to /v1/training_runs/&lt;run&gt;/metrics.</p>`}`;
}

export function RunPage({ runId }) {
  const [run, error] = usePolled(() => api(runPath(runId)), [runId]);
  const [series] = usePolled(() => api(`${runPath(runId)}/metrics`), [runId]);
  return html`<section data-testid="run-page">
    <p><a href="#/">← All jobs and runs</a></p>
    <${ErrorNote} error=${error} />
    ${run &&
    html`<div class="row-between">
        <h1>${run.id}</h1>
        <${StatusBadge} status=${run.status} />
      </div>
      <p class="muted">${run.base_model}, LoRA rank ${run.lora_rank}; ${run.steps} step(s); created ${when(
        run.created_at,
      )}${run.error ? html`; ${run.error}` : ""}</p>
      ${series && curves(series.data)}
      <h2>Checkpoints</h2>
      ${run.checkpoints.length === 0 && html`<p class="muted">None saved.</p>`}
      ${run.checkpoints.length > 0 &&
      html`<table class="table" data-testid="run-checkpoints">
        <thead><tr><th>Path</th><th>Kind</th><th>Id</th><th>Size</th><th>Saved</th></tr></thead>
        <tbody>
          ${run.checkpoints.map(
            (c) => html`<tr key=${c.id}>
              <td><code>${c.tinker_path}</code></td>
              <td>${c.kind}</td>
              <td><code>${c.id}</code></td>
              <td>${c.size_bytes ? size(c.size_bytes) : ""}</td>
              <td>${ago(c.created_at)}</td>
            </tr>`,
          )}
        </tbody>
      </table>`}`}
  </section>`;
}
