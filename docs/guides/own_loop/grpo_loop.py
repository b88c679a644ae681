"""GRPO on single-digit additions, written with the tinker SDK against this service (docs/guides/own-loop.md).

Set TINKER_BASE_URL (the service's URL) and TINKER_API_KEY ("tml-" + your project key), then run it.
"""

import os
import random
import re

import tinker
from tinker import types

BASE_MODEL = os.environ.get("BASE_MODEL", "SmolLM2-135M-Instruct")
STEPS = int(os.environ.get("STEPS", "12"))
PROMPTS, GROUP, LEARNING_RATE = 4, 8, 5e-4


def reward(completion: str, answer: int) -> float:
    """1 when the last number in the completion is the sum (the demo job's grader), else 0."""
    numbers = re.findall(r"-?\d+", completion)
    return 1.0 if numbers and numbers[-1] == str(answer) else 0.0


pairs = [(a, b) for a in range(1, 10) for b in range(1, 10)]
random.Random(0).shuffle(pairs)
service = tinker.ServiceClient()
training = service.create_lora_training_client(base_model=BASE_MODEL, rank=16, seed=0).result()
tokenizer = training.get_tokenizer()
sampling = types.SamplingParams(max_tokens=24, temperature=1.0)

for step in range(STEPS):
    sampler = training.save_weights_and_get_sampling_client().result()  # the policy as it is now
    batch = pairs[step * PROMPTS : (step + 1) * PROMPTS]
    prompts = []
    for a, b in batch:
        chat = [{"role": "user", "content": f"What is {a} + {b}? Answer with only the number."}]
        text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        prompts.append(tokenizer.encode(text, add_special_tokens=False))
    # one group of GROUP completions per prompt, all requested before any is awaited
    groups = [sampler.sample(types.ModelInput.from_ints(p), GROUP, sampling) for p in prompts]
    data, rewards = [], []
    for (a, b), prompt, group in zip(batch, prompts, groups, strict=True):
        sequences = group.result().sequences
        scores = [reward(tokenizer.decode(s.tokens, skip_special_tokens=True), a + b) for s in sequences]
        rewards += scores
        mean = sum(scores) / len(scores)
        for seq, score in zip(sequences, scores, strict=True):
            if score == mean:  # advantage 0: nothing to learn from this completion
                continue
            tokens, n = prompt + seq.tokens, len(prompt) - 1  # n: positions that predict prompt tokens
            inputs = {
                "target_tokens": tokens[1:],
                "logprobs": [0.0] * n + seq.logprobs,  # the sampler's, for the importance ratio
                "advantages": [0.0] * n + [score - mean] * len(seq.tokens),  # group-relative
            }
            data.append(types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]), loss_fn_inputs=inputs))
    if data:  # both submitted, then both awaited: an error in either raises here
        update = training.forward_backward(data, "importance_sampling")
        step_done = training.optim_step(types.AdamParams(learning_rate=LEARNING_RATE))
        update.result()
        step_done.result()
    print(f"step {step + 1}: reward {sum(rewards) / len(rewards):.3f}", flush=True)

print("sampler checkpoint:", training.save_weights_for_sampler("final").result().path)
service.close("success").result()
