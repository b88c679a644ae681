// Line charts of the step metrics, drawn by uPlot (canvas, built for streaming series). A chart is created
// once and fed new data with setData as steps land; its width follows its container.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { html } from "./util.js";

const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d"];

// shares (clip fraction, zero-std groups) start at 0 and keep a visible scale when everything is 0
const FRACTION = { range: (u, lo, hi) => [0, hi > 0 ? Math.min(1, hi * 1.15) : 0.01] };

// y tick labels: as many decimals as the tick spacing needs (an entropy of 4.3341..4.3358 keeps them apart), and
// small values (a KL of 5e-4) in exponent form rather than a column of zeros
const ticks = (u, splits, axisIdx, space, incr) => {
  const decimals = Math.min(8, Math.max(0, Math.ceil(-Math.log10(incr || 1))));
  const tiny = splits.every((v) => v == null || Math.abs(v) < 1e-3);
  return splits.map((v) => {
    if (v == null) return "";
    if (v === 0) return "0";
    return tiny ? v.toExponential(1) : v.toFixed(decimals);
  });
};

// an importance weight sits at 1 within float rounding (1 ± 1e-8 at max_staleness 0): a y range that narrow asks
// uPlot for more ticks than an array holds, so the axis spans at least 1 ± 0.01
const AROUND_ONE = {
  range: (u, lo, hi) => {
    const pad = Math.max((hi - lo) * 0.1, 0.01);
    return [Math.min(lo, 1) - pad, Math.max(hi, 1) + pad];
  },
};
// a KL of 1e-9 (fp32 rounding) gets an axis from 0, at least to 1e-6
const FROM_ZERO = { range: (u, lo, hi) => [0, Math.max(hi * 1.15, 1e-6)] };

function options(title, series, width, fraction, yScale) {
  return {
    title,
    width,
    height: 200,
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
    scales: { x: { time: false }, ...(yScale ? { y: yScale } : fraction ? { y: FRACTION } : {}) },
    axes: [{ label: "step", size: 40 }, { size: 60, values: ticks }],
    series: [
      { label: "step" },
      ...series.map((s, i) => ({
        label: s.label,
        stroke: s.color || PALETTE[i % PALETTE.length],
        width: 2,
        spanGaps: true,
        // sparse series (validation every eval_interval steps) are visible only as points
        points: { show: s.points ?? true, size: 5 },
        dash: s.dash,
      })),
    ],
  };
}

// series: [{label, values, color?, dash?, points?}] with values aligned to steps (null where missing).
export function Chart({ id, title, steps, series, fraction = false, yScale = null, emptyNote = "no data yet" }) {
  const box = useRef(null);
  const plot = useRef(null);
  // uPlot takes its title and labels once: a change (the memory chart learns its device) draws it anew
  const shape = [title, ...series.map((s) => s.label)].join("|");
  const data = [steps, ...series.map((s) => s.values)];

  useEffect(() => {
    const el = box.current;
    const u = new uPlot(options(title, series, el.clientWidth || 400, fraction, yScale), data, el);
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: el.clientWidth, height: 200 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  const counts = series.map((s) => s.values.filter((v) => v !== null && v !== undefined).length);
  const points = counts.length ? counts[0] : 0;
  const empty = !series.some((s) => s.values.some((v) => v !== null && v !== undefined));
  // what is drawn, for the browser tests: points of the first series, and label=count for every series
  const drawn = series.map((s, i) => `${s.label}=${counts[i]}`).join(";");
  const testid = `chart-${id}`;
  return html`<div class="chart" data-testid=${testid} data-title=${title} data-points=${points} data-series=${drawn}>
    <div ref=${box}></div>
    ${empty && html`<div class="chart-empty">${emptyNote}</div>`}
  </div>`;
}

const get = (obj, path) => path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), obj);
const col = (rows, path) =>
  rows.map((r) => {
    const v = get(r, path);
    return typeof v === "number" && Number.isFinite(v) ? v : null;
  });

// The sampler/trainer gap (StepMetrics.off_policy, grpo_core.update.correction): null when the trainer's own forward
// sampled. At max_staleness 0 it is the sampler's rounding; at k > 0 also the policy's drift over the lag.
function offPolicyCharts(rows) {
  return [
    {
      id: "mismatch",
      title: "Sampler/trainer mismatch KL (per token)",
      yScale: FROM_ZERO,
      series: [{ label: "KL(π_sampler ‖ π_trainer)", values: col(rows, "off_policy.mismatch_kl") }],
    },
    {
      id: "is-weight",
      title: "Importance weight π_trainer/π_sampler",
      yScale: AROUND_ONE,
      series: [
        { label: "mean (bounded)", values: col(rows, "off_policy.is_weight_mean") },
        { label: "max (before the bound)", values: col(rows, "off_policy.is_weight_max"), dash: [4, 4] },
      ],
    },
  ];
}

// Peak memory per step (StepMetrics.memory): on a GPU the allocator's peak during the step, on a CPU the process's
// peak RSS so far; the title says which, from the newest row that has it. Null in jobs from before it.
function memoryChart(rows) {
  const values = col(rows, "memory.peak_allocated_gb");
  const last = [...rows].reverse().find((r) => r.memory);
  if (!last) return { id: "memory", title: "Peak memory (GiB)", series: [{ label: "peak", values }] };
  if (!last.memory.device.startsWith("cuda")) {
    return { id: "memory", title: "Peak memory, process RSS (GiB)", series: [{ label: "peak RSS", values }] };
  }
  const total = last.memory.device_total_gb;
  const of = typeof total === "number" ? ` of ${total.toFixed(1)} GiB` : "";
  return {
    id: "memory",
    title: `Peak GPU memory (GiB) · ${last.memory.device}${of}`,
    series: [{ label: "allocated", values }],
  };
}

// The job page's charts from the metrics events' data (StepMetrics in openapi.json), one row per step.
export function MetricCharts({ rows, hyperparameters = {} }) {
  const steps = rows.map((r) => r.step);
  const graderNames = [];
  for (const r of rows) {
    for (const g of r.scores?.graders || []) if (!graderNames.includes(g.name)) graderNames.push(g.name);
  }
  const perGrader = graderNames.map((name) => ({
    label: `grader ${name}`,
    dash: [6, 4],
    values: rows.map((r) => {
      const g = (r.scores?.graders || []).find((x) => x.name === name);
      return g && typeof g.train_reward_mean === "number" ? g.train_reward_mean : null;
    }),
  }));
  const valid = col(rows, "scores.valid_reward_mean");
  const charts = [
    {
      id: "reward",
      title: "Reward",
      series: [
        { label: "train reward", values: col(rows, "scores.train_reward_mean") },
        // one grader is the reward itself: a second line would only hide the first
        ...(graderNames.length > 1 ? perGrader : []),
        ...(valid.some((v) => v !== null) ? [{ label: "validation", values: valid, color: "#111827" }] : []),
      ],
    },
    {
      id: "kl",
      title: "KL to the base model",
      series: [{ label: "kl", values: col(rows, "kl") }],
      // β = 0 (DAPO, Dr. GRPO, ...) drops the reference model: there is no KL to show
      ...(hyperparameters.beta === 0 ? { emptyNote: "not computed: β = 0 (no reference model)" } : {}),
    },
    { id: "entropy", title: "Entropy (per token)", series: [{ label: "entropy", values: col(rows, "entropy") }] },
    {
      id: "length",
      title: "Completion length (tokens)",
      series: [
        { label: "mean", values: col(rows, "completion_length_mean") },
        { label: "max", values: col(rows, "completion_length_max"), dash: [4, 4] },
      ],
    },
    {
      id: "clip",
      title: "Clip fraction",
      fraction: true,
      series: [
        { label: "clipped", values: col(rows, "clip_ratio") },
        { label: "low (Â<0)", values: col(rows, "clip_ratio_low"), dash: [4, 4] },
        { label: "high (Â>0)", values: col(rows, "clip_ratio_high"), dash: [2, 3] },
      ],
    },
    {
      id: "signal",
      title: "Groups without signal (equal rewards)",
      fraction: true,
      series: [{ label: "zero-std share", values: col(rows, "frac_reward_zero_std") }],
    },
    ...(rows.some((r) => r.off_policy) ? offPolicyCharts(rows) : []),
    // steps but none with memory: a job from before it was measured, nothing to draw
    ...(rows.length && !rows.some((r) => r.memory) ? [] : [memoryChart(rows)]),
  ];
  return html`<div class="charts">
    ${charts.map((c) => html`<${Chart} key=${c.id} ...${c} steps=${steps} />`)}
  </div>`;
}
