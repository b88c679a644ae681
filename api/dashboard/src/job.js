// A job's page: state and progress with cancel/pause/resume, health warnings, live metric curves, the rollout
// viewer, checkpoints with download links, and the event log. Everything after the first load arrives through
// the job's event stream (GET …/events/stream), replayed from the start and then live.
import { useEffect, useRef, useState } from "preact/hooks";
import { TERMINAL, api, followEvents, jobsPath } from "./api.js";
import { MetricCharts } from "./charts.js";
import { Playground } from "./playground.js";
import { Readiness } from "./readiness.js";
import { Rollouts } from "./rollouts.js";
import { duration } from "./usage.js";
import { ErrorNote, Progress, StatusBadge, fmt, html, when } from "./util.js";

const CAN = {
  cancel: new Set(["validating_files", "queued", "running", "pausing", "paused"]),
  pause: new Set(["queued", "running"]),
  resume: new Set(["paused"]),
};

function useJobFeed(jobId) {
  const [job, setJob] = useState(null);
  const [error, setError] = useState(null);
  const [stream, setStream] = useState("connecting");
  const [, setTick] = useState(0);
  const feed = useRef({ steps: new Map(), messages: [] });

  useEffect(() => {
    const ctl = new AbortController();
    let frame = 0;
    let refresh = 0;
    const redraw = () => {
      if (!frame) frame = requestAnimationFrame(() => ((frame = 0), setTick((t) => t + 1)));
    };
    const loadJob = async () => {
      try {
        const j = await api(jobsPath(jobId), { signal: ctl.signal });
        setJob(j);
        setError(null);
      } catch (e) {
        if (!ctl.signal.aborted) setError(e);
      }
    };
    const loadSoon = () => {
      // at most one job read per 2 s however fast events flow (the API's rate limit is per key, across tabs)
      if (!refresh) refresh = setTimeout(() => ((refresh = 0), loadJob()), 2000);
    };
    const onEvent = (e) => {
      const f = feed.current;
      if (e.type === "metrics" && e.data) {
        f.steps.set(e.data.step, e.data); // a step redone after a resume replaces the earlier one
      } else {
        f.messages.push(e);
      }
      redraw();
      loadSoon();
    };
    loadJob();
    followEvents(jobId, onEvent, { signal: ctl.signal, onState: setStream });
    const poll = setInterval(loadJob, 10000); // the estimate and anything the events do not carry
    return () => {
      ctl.abort();
      clearInterval(poll);
      clearTimeout(refresh);
      cancelAnimationFrame(frame);
    };
  }, [jobId]);

  return { job, setJob, error, stream, feed: feed.current };
}

function Controls({ job, onJob }) {
  const [busy, setBusy] = useState(null);
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState(null);
  const act = async (action) => {
    if (action === "cancel" && !confirming) {
      setConfirming(true);
      setTimeout(() => setConfirming(false), 5000);
      return;
    }
    setConfirming(false);
    setBusy(action);
    setError(null);
    try {
      onJob(await api(`${jobsPath(job.id)}/${action}`, { method: "POST" }));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };
  const button = (action, label, cls = "") =>
    CAN[action].has(job.status) &&
    html`<button class=${cls} data-testid=${action} disabled=${busy !== null} onClick=${() => act(action)}>
      ${busy === action ? "…" : label}
    </button>`;
  return html`<div class="controls">
    ${button("pause", "Pause")} ${button("resume", "Resume", "primary")}
    ${button("cancel", confirming ? "Really cancel?" : "Cancel", "danger")}
    <${ErrorNote} error=${error} />
  </div>`;
}

function Warnings({ job, messages }) {
  const flagged = messages.filter((m) => m.level === "warn" || m.level === "error");
  if (!flagged.length && !job.error) return null;
  return html`<section class="warnings" data-testid="warnings">
    ${job.error &&
    html`<div class="warning level-error">
      <b>Job failed: ${job.error.code}</b> ${job.error.message}${job.error.param && ` (${job.error.param})`}
    </div>`}
    ${flagged.map(
      (m) => html`<div key=${m.id} class=${`warning level-${m.level}`}>
        <span class="muted">${when(m.created_at)}</span> ${m.message}
      </div>`,
    )}
  </section>`;
}

function Checkpoints({ job, version }) {
  const [items, setItems] = useState([]);
  const [error, setError] = useState(null);
  useEffect(() => {
    api(`${jobsPath(job.id)}/checkpoints?limit=100`)
      .then((p) => (setItems(p.data), setError(null)))
      .catch(setError);
  }, [job.id, version]);
  const download = async (c) => {
    try {
      const link = await api(`${jobsPath(job.id)}/checkpoints/${c.id}/download_link`);
      const a = document.createElement("a");
      a.href = link.url;
      a.download = `${c.id}.tar`;
      document.body.appendChild(a);
      a.click();
      a.remove();
    } catch (e) {
      setError(e);
    }
  };
  return html`<section class="card" data-testid="checkpoints">
    <h2>Checkpoints</h2>
    <${ErrorNote} error=${error} />
    ${items.length === 0 && html`<p class="muted">None yet (every checkpoint_interval steps and at the end).</p>`}
    ${items.length > 0 &&
    html`<table class="table">
      <thead><tr><th>Step</th><th>Train reward</th><th>Validation</th><th>Saved</th><th></th></tr></thead>
      <tbody>
        ${items.map(
          (c) => html`<tr key=${c.id}>
            <td>${c.step_number} ${c.best && html`<span class="badge best">best</span>`}</td>
            <td>${fmt(c.metrics?.train_reward_mean)}</td>
            <td>${fmt(c.metrics?.valid_reward_mean)}</td>
            <td>${when(c.created_at)}</td>
            <td><button class="small" data-testid="download" onClick=${() => download(c)}>Download adapter</button></td>
          </tr>`,
        )}
      </tbody>
    </table>`}
  </section>`;
}

// Where and how the worker trains the job (Job.execution: what the `auto` settings resolved to on its hardware),
// one line under the title; nothing until the worker starts training.
function Execution({ ex }) {
  if (!ex) return null;
  const where = ex.device.startsWith("cuda")
    ? [ex.device, ex.device_name + (ex.device_total_gb != null ? ` (${ex.device_total_gb.toFixed(1)} GiB)` : "")]
    : ["CPU", ...(ex.threads != null ? [`${ex.threads} threads`] : [])];
  const share = ex.vllm_gpu_memory_utilization;
  const parts = [
    ...where,
    ex.precision,
    `micro-batch ${ex.micro_batch_size}`,
    `checkpointing ${ex.gradient_checkpointing ? "on" : "off"}`,
    ex.rollout_engine + (share != null ? ` (${Math.round(100 * share)}% of the GPU)` : ""),
    ...(ex.pool_tenants != null ? [`worker shared by ${ex.pool_tenants} jobs, in turn`] : []),
  ];
  const why = `${ex.device_name}; ${ex.precision}: ${ex.precision_reason}`;
  return html`<p class="muted" data-testid="execution" title=${why}>${parts.join(" · ")}</p>`;
}

function EventLog({ messages }) {
  const recent = messages.slice(-200).reverse();
  return html`<section class="card">
    <h2>Events</h2>
    <ul class="events" data-testid="events">
      ${recent.map(
        (m) => html`<li key=${m.id} class=${`level-${m.level}`}><span class="muted">${when(m.created_at)}</span>
          ${m.message}</li>`,
      )}
    </ul>
  </section>`;
}

export function JobPage({ jobId }) {
  const { job, setJob, error, stream, feed } = useJobFeed(jobId);
  if (!job) return html`<section><${ErrorNote} error=${error} />${!error && html`<p class="muted">Loading…</p>`}</section>`;
  const rows = [...feed.steps.values()].sort((a, b) => a.step - b.step);
  const last = rows[rows.length - 1];
  const hp = job.hyperparameters || {};
  return html`<section data-testid="job-page" data-job-id=${job.id}>
    <div class="row-between">
      <div>
        <h1>${job.id} <${StatusBadge} status=${job.status} /></h1>
        <p class="muted">
          ${job.model}${job.suffix && ` · ${job.suffix}`} · created ${when(job.created_at)}
          ${job.estimated_finish && !TERMINAL.has(job.status) && ` · ETA ${when(job.estimated_finish)}`}
          · stream <span data-testid="stream-state">${stream}</span>
        </p>
        ${job.waiting && html`<p class="muted" data-testid="waiting">${job.waiting.reason}</p>`}
        <${Execution} ex=${job.execution} />
      </div>
      <${Controls} job=${job} onJob=${setJob} />
    </div>
    <${ErrorNote} error=${error} />
    <div class="summary">
      <${Progress} done=${job.steps_done} total=${job.total_steps} />
      <div><span class="muted">train reward</span> <b data-testid="last-reward">${fmt(last?.scores?.train_reward_mean)}</b></div>
      <div><span class="muted">validation</span> <b>${fmt([...rows].reverse().find((r) => r.scores?.valid_reward_mean != null)?.scores.valid_reward_mean)}</b></div>
      <div><span class="muted">G × batch</span> <b>${hp.group_size} × ${hp.batch_size}</b></div>
      <div><span class="muted">tokens/s</span> <b>${fmt(last?.tokens_per_second, 1)}</b></div>
      <div title="devices × seconds from each attempt's claim to its last contact (GET /v1/usage?job_id=)">
        <span class="muted">device time</span> <b data-testid="device-time">${duration(job.usage?.device_seconds || 0)}</b>
      </div>
      ${job.usage?.cost && job.usage.cost.unit !== "device_hour" &&
      html`<div title="from its usage records, at this project's prices (GET /v1/billing)">
        <span class="muted">cost</span> <b data-testid="cost">${Number(job.usage.cost.amount).toPrecision(3)} ${job.usage.cost.unit}</b>
      </div>`}
      ${job.budget && (job.budget.max_cost || job.budget.max_device_hours) &&
      html`<div title="the job pauses at a checkpoint when it reaches its budget (a warning at 80 %)">
        <span class="muted">budget</span> <b data-testid="budget" class=${job.budget_alert ? "warn" : ""}>${[
          job.budget.max_cost && `${job.budget.max_cost} ${job.usage?.cost?.unit === "device_hour" ? "device-h" : job.usage?.cost?.unit || ""}`,
          job.budget.max_device_hours && `${job.budget.max_device_hours} device-h`,
        ].filter(Boolean).join(", ")}${job.budget_alert ? ` (${job.budget_alert})` : ""}</b>
      </div>`}
      ${job.fine_tuned_model && html`<div><span class="muted">model</span> <code>${job.fine_tuned_model}</code></div>`}
    </div>
    <${Warnings} job=${job} messages=${feed.messages} />
    <${Readiness} job=${job} version=${`${feed.messages.length}:${job.status}`} />
    <${MetricCharts} rows=${rows} hyperparameters=${hp} />
    <${Rollouts} jobId=${job.id} latest=${last?.step ?? null} />
    <${Checkpoints} job=${job} version=${`${feed.messages.length}:${job.status}`} />
    <${Playground} job=${job} version=${job.status} />
    <${EventLog} messages=${feed.messages} />
    <details class="card"><summary>Hyperparameters and grader</summary><pre>${JSON.stringify(job.method, null, 2)}</pre></details>
  </section>`;
}
