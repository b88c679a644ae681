"""Training inputs: JSONL rows checked and rendered into prompts, and prompt-token counting (no torch)."""
