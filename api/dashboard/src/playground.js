// The job page's playground: one prompt to two models side by side (the base model and the fine-tuned model, or
// two checkpoints), both streamed from /v1/chat/completions at once, and each answer scored with the job's own
// grader (/v1/fine_tuning/alpha/graders/run) when the user gives the item's columns as JSON.
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, auth, jobsPath } from "./api.js";
import { ErrorNote, fmt, html } from "./util.js";

// Streams the answer of `model`, calling onText(text so far); resolves to the whole text.
async function streamChat(model, prompt, params, onText, signal) {
  const headers = { "Content-Type": "application/json" };
  if (auth.key) headers.Authorization = `Bearer ${auth.key}`;
  const body = { model, messages: [{ role: "user", content: prompt }], stream: true, ...params };
  const r = await fetch("/v1/chat/completions", { method: "POST", headers, body: JSON.stringify(body), signal });
  if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, cut).trim();
      buf = buf.slice(cut + 1);
      if (!line.startsWith("data:") || line === "data: [DONE]") continue;
      const chunk = JSON.parse(line.slice(5));
      if (chunk.error) throw new ApiError(502, chunk);
      text += chunk.choices?.[0]?.delta?.content || "";
      onText(text);
    }
  }
  return text;
}

function modelChoices(job, checkpoints) {
  const out = [{ id: job.model, label: `${job.model} (base)` }];
  if (job.fine_tuned_model) out.push({ id: job.fine_tuned_model, label: "fine-tuned model (final)" });
  for (const c of checkpoints) {
    out.push({ id: c.fine_tuned_model_checkpoint, label: `checkpoint step ${c.step_number}${c.best ? " (best)" : ""}` });
  }
  return out;
}

function Side({ side, choices, onModel }) {
  return html`<div class="side" data-testid=${`side-${side.key}`}>
    <select data-testid=${`model-${side.key}`} value=${side.model} onChange=${(e) => onModel(e.target.value)}>
      ${choices.map((c) => html`<option key=${c.id} value=${c.id}>${c.label}</option>`)}
    </select>
    <pre class="answer" data-testid=${`answer-${side.key}`}>${side.text}</pre>
    ${side.reward != null && html`<div>grader score <b data-testid=${`score-${side.key}`}>${fmt(side.reward)}</b></div>`}
    <${ErrorNote} error=${side.error} />
  </div>`;
}

export function Playground({ job, version }) {
  const [checkpoints, setCheckpoints] = useState([]);
  const [prompt, setPrompt] = useState("");
  const [item, setItem] = useState("");
  const [temperature, setTemperature] = useState(0);
  const [running, setRunning] = useState(false);
  const [error, setError] = useState(null);
  const [sides, setSides] = useState([
    { key: "a", model: job.model, text: "", reward: null, error: null },
    { key: "b", model: job.fine_tuned_model || job.model, text: "", reward: null, error: null },
  ]);
  useEffect(() => {
    api(`${jobsPath(job.id)}/checkpoints?limit=100`)
      .then((p) => {
        setCheckpoints(p.data);
        // before the job succeeds, the newest checkpoint is what there is to compare with
        if (!job.fine_tuned_model && p.data.length)
          setSides((s) => s.map((x) => (x.key === "b" && x.model === job.model ? { ...x, model: p.data[0].fine_tuned_model_checkpoint } : x)));
      })
      .catch(setError);
  }, [job.id, version]);
  const choices = modelChoices(job, checkpoints);
  const update = (key, patch) => setSides((s) => s.map((x) => (x.key === key ? { ...x, ...patch } : x)));

  const ask = async (e) => {
    e.preventDefault();
    setError(null);
    let columns = null;
    if (item.trim()) {
      try {
        columns = JSON.parse(item);
      } catch (err) {
        setError(new ApiError(400, { error: { message: `item columns: not JSON (${err.message})`, param: "item" } }));
        return;
      }
    }
    setRunning(true);
    const params = { temperature: Number(temperature), max_tokens: 256 };
    await Promise.all(
      sides.map(async (side) => {
        update(side.key, { text: "", reward: null, error: null });
        try {
          const text = await streamChat(side.model, prompt, params, (t) => update(side.key, { text: t }));
          if (columns) {
            const grader = job.method?.reinforcement?.grader;
            const scored = await api("/v1/fine_tuning/alpha/graders/run", {
              method: "POST",
              body: { grader, model_sample: text, item: columns },
            });
            update(side.key, { reward: scored.reward });
          }
        } catch (err) {
          update(side.key, { error: err });
        }
      }),
    );
    setRunning(false);
  };

  return html`<section class="card" data-testid="playground">
    <h2>Playground</h2>
    <form onSubmit=${ask}>
      <textarea data-testid="prompt" rows="3" placeholder="A prompt, as a user message" value=${prompt}
        onInput=${(e) => setPrompt(e.target.value)} required></textarea>
      <input data-testid="item" placeholder='Item columns for the grader, e.g. {"answer": "4"} (optional)' value=${item}
        onInput=${(e) => setItem(e.target.value)} />
      <label>temperature <input type="number" min="0" max="2" step="0.1" value=${temperature}
        onInput=${(e) => setTemperature(e.target.value)} /></label>
      <button class="primary" data-testid="ask" disabled=${running || !prompt.trim()}>${running ? "…" : "Ask both"}</button>
    </form>
    <${ErrorNote} error=${error} />
    <div class="sides">
      ${sides.map((side) => html`<${Side} key=${side.key} side=${side} choices=${choices} onModel=${(m) => update(side.key, { model: m })} />`)}
    </div>
  </section>`;
}
