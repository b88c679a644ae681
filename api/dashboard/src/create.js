// Create a job: upload the training (and validation) JSONL, describe the grader (a template per type, checked
// by POST /v1/fine_tuning/alpha/graders/validate), pick a model and a recipe, set the common hyperparameters, ask
// what it will cost (POST /v1/fine_tuning/jobs/estimate) and set a budget, submit. The API validates everything
// again; its error names the field at fault.
import { useEffect, useState } from "preact/hooks";
import { api, jobsPath } from "./api.js";
import { ErrorNote, html, navigate } from "./util.js";

const GRADERS = {
  string_check: { type: "string_check", name: "exact", input: "{{sample.output_text}}", reference: "{{item.answer}}", operation: "eq" },
  math: { type: "math", name: "math", reference: "{{item.answer}}" },
  text_similarity: {
    type: "text_similarity",
    name: "similar",
    input: "{{sample.output_text}}",
    reference: "{{item.answer}}",
    evaluation_metric: "fuzzy_match",
  },
  python: { type: "python", name: "my_reward", timeout_seconds: 30 },
  multi: {
    type: "multi",
    name: "multi",
    graders: {
      correct: { type: "string_check", input: "{{sample.output_text}}", reference: "{{item.answer}}", operation: "ilike" },
      short: { type: "length", mode: "linear", target: 200 },
    },
    calculate_output: "correct + 0.1 * short",
  },
};

const PYTHON_SOURCE = `def grade(sample, item):
    """sample["output_text"] is the completion; item is the dataset row. Return a float (None: not applicable)."""
    return float(sample["output_text"].strip() == item["answer"])
`;

// empty = not sent: the recipe's value, or the API's default (the placeholder, from the API's own schema)
const FIELDS = [
  ["group_size", "Group size G"],
  ["batch_size", "Prompts per step"],
  ["max_steps", "Max steps"],
  ["learning_rate", "Learning rate"],
  ["max_completion_tokens", "Max completion tokens"],
  ["beta", "KL coefficient β"],
];

// crypto.randomUUID exists only in secure contexts (https, localhost): not on http://gpu-box:8000
function randomKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `dash-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

// a file picked once is uploaded once, however often the form is submitted (a rejected job leaves no copies)
const uploaded = new WeakMap();

async function upload(file) {
  if (uploaded.has(file)) return uploaded.get(file);
  const form = new FormData();
  form.append("purpose", "fine-tune");
  form.append("file", file);
  const id = (await api("/v1/files", { method: "POST", form })).id;
  uploaded.set(file, id);
  return id;
}

function FilePick({ label, name, files, value, onChange, required }) {
  return html`<fieldset class="file-pick">
    <legend>${label}</legend>
    <input type="file" name=${name} accept=".jsonl,application/jsonl" onChange=${(e) => onChange({ file: e.target.files[0] || null, id: "" })} />
    <span class="muted">or an uploaded file</span>
    <select name=${`${name}_id`} value=${value.id} onChange=${(e) => onChange({ file: null, id: e.target.value })}>
      <option value="">${required ? "—" : "none"}</option>
      ${files.map((f) => html`<option key=${f.id} value=${f.id}>${f.filename} (${f.id})</option>`)}
    </select>
  </fieldset>`;
}

// what POST /v1/fine_tuning/jobs/estimate answered, in a sentence: the expected figure, its range, how sure
function EstimateNote({ e }) {
  const unit = e.unit === "device_hour" ? "device-hours" : e.unit;
  const f = (x) => Number(x).toPrecision(3);
  const d = e.drivers;
  return html`<p class="muted" data-testid="estimate">
    About <b>${f(e.cost.expected)} ${unit}</b> (${f(e.cost.low)} to ${f(e.cost.high)}),
    ${f(e.device_hours.expected)} device-hours on ${e.device_kind}, ${f(e.step_seconds.expected)} s a step
    (${d.steps} steps × ${d.prompts_per_step} prompts × ${d.samples_per_prompt} samples); ${e.confidence} confidence: ${e.basis}.
  </p>`;
}

export function CreateJob() {
  const [models, setModels] = useState([]);
  const [recipes, setRecipes] = useState([]);
  const [hpSchema, setHpSchema] = useState({}); // GRPOConfig's properties: defaults and descriptions
  const [files, setFiles] = useState([]);
  const [model, setModel] = useState("");
  const [train, setTrain] = useState({ file: null, id: "" });
  const [valid, setValid] = useState({ file: null, id: "" });
  const [graderType, setGraderType] = useState("string_check");
  const [grader, setGrader] = useState(JSON.stringify(GRADERS.string_check, null, 2));
  const [source, setSource] = useState(PYTHON_SOURCE);
  const [recipe, setRecipe] = useState("");
  const [hp, setHp] = useState(Object.fromEntries(FIELDS.map(([k]) => [k, ""])));
  const [extra, setExtra] = useState("{}");
  const [suffix, setSuffix] = useState("");
  const [error, setError] = useState(null);
  const [check, setCheck] = useState(null);
  const [busy, setBusy] = useState(false);
  const [maxCost, setMaxCost] = useState("");
  const [estimate, setEstimate] = useState(null);
  // one Idempotency-Key per job body: a retry after a timeout replays the first answer, a changed form is new
  const [attempt, setAttempt] = useState({ body: "", key: "" });

  useEffect(() => {
    // base models only: /v1/models lists the project's fine-tuned models too, which serve but do not train
    api("/v1/models")
      .then((m) => {
        const base = m.data.filter((x) => !x.parent);
        setModels(base);
        setModel((cur) => cur || base[0]?.id || "");
      })
      .catch(setError);
    api("/v1/files?purpose=fine-tune&limit=100").then((p) => setFiles(p.data)).catch(() => {});
    // recipe names and defaults come from the API's own schema, so they never drift from grpo_core
    fetch("/openapi.json")
      .then((r) => r.json())
      .then((spec) => {
        const props = spec.components.schemas.GRPOConfig.properties;
        setHpSchema(props);
        setRecipes(props.recipe.anyOf[0].enum);
      })
      .catch(() => {});
  }, []);

  const parseGrader = () => {
    let spec;
    try {
      spec = JSON.parse(grader);
    } catch (e) {
      throw new Error(`grader: not JSON (${e.message})`);
    }
    // a python grader's code is edited in its own box rather than as a JSON string
    return spec?.type === "python" && !("source" in spec) ? { ...spec, source } : spec;
  };
  const validateGrader = async () => {
    setCheck(null);
    try {
      const spec = parseGrader();
      await api("/v1/fine_tuning/alpha/graders/validate", { method: "POST", body: { grader: spec } });
      setCheck("The grader is valid.");
    } catch (e) {
      setCheck(`Invalid: ${e}`);
    }
  };

  // the job's body from the form (files uploaded first): what both "Estimate cost" and "Create job" send
  const buildBody = async () => {
    const spec = parseGrader();
    let more;
    try {
      more = JSON.parse(extra || "{}");
    } catch (err) {
      throw new Error(`more hyperparameters: not JSON (${err.message})`);
    }
    const hyper = { ...more };
    for (const [k] of FIELDS) {
      if (hp[k] === "") continue;
      if (k in more) throw new Error(`${k} is set both in its box and in "more hyperparameters"`);
      hyper[k] = Number(hp[k]);
    }
    if (recipe) hyper.recipe = recipe;
    if (!train.file && !train.id) throw new Error("training file: choose a JSONL file");
    const trainingFile = train.file ? await upload(train.file) : train.id;
    const validationFile = valid.file ? await upload(valid.file) : valid.id || null;
    return {
      model,
      training_file: trainingFile,
      ...(validationFile ? { validation_file: validationFile } : {}),
      ...(suffix ? { suffix } : {}),
      method: { type: "reinforcement", reinforcement: { grader: spec, hyperparameters: hyper } },
      ...(maxCost ? { budget: { max_cost: Number(maxCost) } } : {}),
    };
  };

  const askEstimate = async () => {
    setError(null);
    setEstimate(null);
    setBusy(true);
    try {
      setEstimate(await api(`${jobsPath()}/estimate`, { method: "POST", body: await buildBody() }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const body = await buildBody();
      const text = JSON.stringify(body);
      const key = text === attempt.body ? attempt.key : randomKey();
      setAttempt({ body: text, key });
      const job = await api(jobsPath(), { method: "POST", body, idempotencyKey: key });
      navigate(`#/jobs/${job.id}`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return html`<form class="card create" onSubmit=${submit} data-testid="create-job">
    <h1>New fine-tuning job</h1>
    <label>Base model
      <select name="model" value=${model} onChange=${(e) => setModel(e.target.value)}>
        ${models.map((m) => html`<option key=${m.id} value=${m.id}>${m.id}</option>`)}
      </select>
    </label>
    <${FilePick} label="Training data (JSONL: a prompt per row, plus the columns your grader reads)" name="training_file"
      files=${files} value=${train} onChange=${setTrain} required />
    <${FilePick} label="Validation data (optional)" name="validation_file" files=${files} value=${valid} onChange=${setValid} />
    <fieldset>
      <legend>Grader</legend>
      <label>Type
        <select name="grader_type" value=${graderType} onChange=${(e) => {
          setGraderType(e.target.value);
          setGrader(JSON.stringify(GRADERS[e.target.value], null, 2));
          setCheck(null);
        }}>
          ${Object.keys(GRADERS).map((t) => html`<option key=${t} value=${t}>${t}</option>`)}
        </select>
      </label>
      <textarea name="grader" rows=${graderType === "python" ? 3 : 9} spellcheck="false" value=${grader}
        onInput=${(e) => setGrader(e.target.value)}></textarea>
      ${graderType === "python" &&
      html`<label>Python source (runs in the sandbox: no network, numpy/sympy/rapidfuzz available)
        <textarea name="source" rows="8" spellcheck="false" value=${source} onInput=${(e) => setSource(e.target.value)}></textarea>
      </label>`}
      <button type="button" class="small" onClick=${validateGrader}>Check grader</button>
      ${check && html`<span class="muted" data-testid="grader-check">${check}</span>`}
    </fieldset>
    <fieldset>
      <legend>Hyperparameters</legend>
      <label>Recipe
        <select name="recipe" value=${recipe} onChange=${(e) => setRecipe(e.target.value)}>
          <option value="">none (GRPO defaults)</option>
          ${recipes.map((r) => html`<option key=${r} value=${r}>${r}</option>`)}
        </select>
      </label>
      <div class="grid">
        ${FIELDS.map(
          ([k, label]) => html`<label key=${k}>${label}
            <input name=${k} type="number" step="any" value=${hp[k]} placeholder=${String(hpSchema[k]?.default ?? "")}
              title=${hpSchema[k]?.description ?? ""} onInput=${(e) => setHp({ ...hp, [k]: e.target.value })} />
          </label>`,
        )}
      </div>
      <label>More hyperparameters (JSON, e.g. {"lora": {"rank": 8}, "precision": "bf16"})
        <textarea name="extra" rows="3" spellcheck="false" value=${extra} onInput=${(e) => setExtra(e.target.value)}></textarea>
      </label>
      <label>Suffix <input name="suffix" maxlength="64" value=${suffix} onInput=${(e) => setSuffix(e.target.value)} /></label>
    </fieldset>
    <fieldset>
      <legend>Cost</legend>
      <label>Budget: pause at a checkpoint when the job has cost (optional)
        <input name="max_cost" type="number" step="any" min="0" value=${maxCost} onInput=${(e) => setMaxCost(e.target.value)} />
      </label>
      <button type="button" class="small" onClick=${askEstimate} disabled=${busy} data-testid="estimate-job">Estimate cost</button>
      ${estimate && html`<${EstimateNote} e=${estimate} />`}
    </fieldset>
    <${ErrorNote} error=${error} />
    <button class="primary" type="submit" disabled=${busy} data-testid="submit-job">${busy ? "Submitting…" : "Create job"}</button>
  </form>`;
}
