import re


def grade(sample, item):
    """1.0 when the last number in the answer is the right sum (the model's final answer), else 0.0."""
    numbers = re.findall(r"-?\d+", sample["output_text"])
    return 1.0 if numbers and numbers[-1] == item["answer"] else 0.0
