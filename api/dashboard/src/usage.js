// The usage page (#/usage): what this project used (GET /v1/usage), by UTC day or by job, over a chosen window,
// with the totals and the device-hours by device kind. Refreshed every few seconds like the lists (usePolled).
import { useState } from "preact/hooks";
import { api } from "./api.js";
import { ErrorNote, fmt, html, usePolled } from "./util.js";

const WINDOWS = [
  ["7 days", 7],
  ["30 days", 30],
  ["90 days", 90],
  ["all time", null],
];
// [heading, field, format]: the counters of a bucket (api/usage/schemas.py), as the table shows them
// device-seconds as people read them: seconds, minutes, then hours
export const duration = (s) => (s < 120 ? `${Math.round(s)} s` : s < 7200 ? `${fmt(s / 60, 1)} min` : `${fmt(s / 3600, 2)} h`);
const COLUMNS = [
  ["Device time", "device_seconds", duration],
  ["Steps", "steps", String],
  ["Sampled tokens", "sampled_tokens", String],
  ["Trained tokens", "trained_tokens", String],
  ["Grader calls", "grader_calls", String],
  ["Grader seconds", "grader_seconds", (v) => fmt(v, 1)],
  ["Eval tokens", "eval_tokens", String],
  ["Inference tokens", "inference_tokens", String],
];

export function usagePath(by, days, now = Date.now() / 1000) {
  const q = new URLSearchParams({ group_by: by, limit: "1000" });
  if (days) q.set("start_time", String(Math.floor(now - days * 86400)));
  return `/v1/usage?${q}`;
}

function label(bucket, by) {
  if (by === "day") return bucket.day;
  if (!bucket.job_id) return html`<span class="muted">evals, sessions, inference</span>`;
  return html`<a href=${`#/jobs/${bucket.job_id}`}>${bucket.job_id}</a>`;
}

export function UsagePage() {
  const [by, setBy] = useState("day");
  const [days, setDays] = useState(30);
  const [page, error] = usePolled(() => api(usagePath(by, days)), [by, days]);
  const totals = page?.totals;
  const kinds = Object.entries(totals?.device_seconds_by_kind || {}).sort();
  return html`<section data-testid="usage-page">
    <div class="row-between">
      <h1>Usage</h1>
      <div>
        <label>Group by <select data-testid="usage-by" value=${by} onChange=${(e) => setBy(e.target.value)}>
          <option value="day">day (UTC)</option>
          <option value="job">job</option>
        </select></label>
        ${" "}
        <label>Since <select data-testid="usage-window" value=${days ?? ""}
          onChange=${(e) => setDays(e.target.value ? Number(e.target.value) : null)}>
          ${WINDOWS.map(([name, d]) => html`<option key=${name} value=${d ?? ""}>${name}</option>`)}
        </select></label>
      </div>
    </div>
    <p class="muted">Device time runs from each attempt's claim to its worker's last contact, on every device of every
      node; steps and tokens count each attempt's own work (a resumed job's re-run steps too). An attempt belongs to
      the day it started.</p>
    <${ErrorNote} error=${error} />
    ${!page && !error && html`<p class="muted">Loading…</p>`}
    ${page &&
    html`<table class="table" data-testid="usage-table">
      <thead>
        <tr><th>${by === "day" ? "Day" : "Job"}</th>${COLUMNS.map(([h]) => html`<th key=${h}>${h}</th>`)}</tr>
      </thead>
      <tbody>
        ${page.data.map(
          (b) => html`<tr key=${b.day || b.job_id || "none"} data-bucket=${b.day || b.job_id || ""}>
            <td>${label(b, by)}</td>
            ${COLUMNS.map(([h, f, show]) => html`<td key=${h}>${show(b[f] || 0)}</td>`)}
          </tr>`,
        )}
        <tr data-testid="usage-totals">
          <td><b>Total</b></td>
          ${COLUMNS.map(([h, f, show]) => html`<td key=${h}><b>${show(totals[f] || 0)}</b></td>`)}
        </tr>
      </tbody>
    </table>
    ${page.data.length === 0 && html`<p class="muted">Nothing used in this window.</p>`}
    ${kinds.length > 0 &&
    html`<p class="muted" data-testid="usage-devices">Device time by device: ${kinds
      .map(([k, s]) => `${k} ${duration(s)}`)
      .join(" · ")}</p>`}
    ${page.has_more && html`<p class="muted">More buckets than shown: choose a shorter window.</p>`}`}
  </section>`;
}
