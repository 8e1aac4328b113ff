"""The st plan engine (seed 000): model, pure reducer, JSONL store, doctor, mutations."""
