"""Today's models as a team lists them (catalogue names from GET /v2/models), in tiers by public standing, and hard and
easy prompts written for switchboard: the common-sense test of the default router (issue 32, item 5), shared by
tests/routing/test_todays_models.py, tests/selection/test_todays_models_http.py and benchmarks/todays_models.py.

The tiers are a judgement of public standing in late 2025 (vendors' own model ladders, LMArena's text leaderboard,
GPQA Diamond and SWE-bench Verified as published), not read from the router's figures: top, the vendors' flagships;
then their mid models; then their small ones; bottom, last year's small models that today's mid models replaced.
The prompts are this file's own, none drawn from a benchmark.
"""

from __future__ import annotations

TIERS: dict[str, tuple[tuple[str, str], ...]] = {
    "top": (("openai", "gpt-5"), ("anthropic", "claude-opus-4-5"), ("google", "gemini-2.5-pro")),
    "mid": (("openai", "gpt-5-mini"), ("anthropic", "claude-sonnet-4-5"), ("google", "gemini-2.5-flash")),
    "small": (("openai", "gpt-5-nano"), ("anthropic", "claude-haiku-4-5"), ("google", "gemini-2.5-flash-lite")),
    "bottom": (("openai", "gpt-4o-mini"), ("openai", "gpt-4.1-nano"), ("mistral", "mistral-small-latest")),
}
# Each vendor's family, flagship first, in its own order (the gpt-5 / mini / nano; opus / sonnet / haiku;
# pro / flash / flash-lite).
FAMILIES: dict[str, tuple[tuple[str, str], ...]] = {
    "gpt-5": (("openai", "gpt-5"), ("openai", "gpt-5-mini"), ("openai", "gpt-5-nano")),
    "claude-4.5": (("anthropic", "claude-opus-4-5"), ("anthropic", "claude-sonnet-4-5"),
                   ("anthropic", "claude-haiku-4-5")),
    "gemini-2.5": (("google", "gemini-2.5-pro"), ("google", "gemini-2.5-flash"), ("google", "gemini-2.5-flash-lite")),
}

HARD_PROMPTS = (
    "Prove that for every positive integer n, every prime factor p of 2^(2^n) + 1 satisfies p ≡ 1 (mod 2^(n+1)). "
    "Give a complete, rigorous proof.",
    "Implement a lock-free multi-producer multi-consumer bounded queue in C++20 with std::atomic, and explain which "
    "memory orderings each operation needs and how your design avoids the ABA problem.",
    "Let f be a continuous function on [0, 1] with the integral of x^n f(x) over [0, 1] equal to 0 for every "
    "n >= 0. Prove that f is identically zero.",
    "Design a consensus protocol for five replicas that tolerates two crash failures and network partitions; prove "
    "that it never lets two replicas commit different values at the same log index.",
    "A particle moves in the potential V(x) = x^4 - 2x^2. Using the WKB approximation, estimate the tunnelling "
    "splitting of the two lowest energy levels and state when the approximation fails.",
    "Write a Rust function that parses arithmetic expressions with precedence climbing, supports unary minus and "
    "right-associative exponentiation, and returns precise error spans; include property-based tests.",
    "Find all functions f from the reals to the reals such that f(x + f(y)) = f(x) + y + f(f(y)) for all x and y, "
    "and prove that there are no others.",
    "Explain the mechanism of the Diels-Alder reaction between cyclopentadiene and maleic anhydride, including why "
    "the endo product dominates under kinetic control, with orbital diagrams described in words.",
    "Given an undirected graph with 10^5 vertices and weighted edges, compute for every vertex the second-shortest "
    "simple path length to vertex 1 in O(m log n); write the algorithm in Python and prove it correct.",
    "Our Go service deadlocks under load about once a day: goroutines block on a mutex taken inside a channel send "
    "in a select with a context timeout. Explain the likely interleaving and how to restructure the code.",
    "How many ways are there to tile a 3 x 20 rectangle with 2 x 1 dominoes? Derive the recurrence and solve it "
    "exactly.",
    "Derive the closed form of the sum over k from 1 to n of k^2 * C(n, k), and prove it by a combinatorial argument.",
)

EASY_PROMPTS = (
    "Say hello in French.",
    "What is the capital of Italy?",
    "Translate 'thank you very much' into Spanish.",
    "Write a two-line poem about rain.",
    "What is 7 times 8?",
    "Name three fruits that are yellow.",
    "Give me a friendly one-sentence reply to 'see you tomorrow'.",
    "Fix the spelling: 'I recieved the pakage yesterday.'",
    "What colour do you get by mixing blue and yellow?",
    "Suggest a name for a pet goldfish.",
    "How many days are there in a week?",
    "Rewrite 'pls send the file asap' politely.",
)


def listed(pairs) -> list[dict[str, str]]:
    """modelSelect's llm_providers for (provider, model) pairs."""
    return [{"provider": p, "model": m} for p, m in pairs]


def all_models() -> tuple[tuple[str, str], ...]:
    return tuple(pair for tier in TIERS.values() for pair in tier)


class InProcess:
    """The default router's decisions for a candidate list without HTTP: the served router's predictions, the
    catalogue's prices, the policy, and the schedule the dial gives a caller with no history yet (the shipped
    calibration pool scored for these candidates)."""

    def __init__(self, router, pairs):
        # lazy: the support module is imported by benchmarks that never route in process
        import numpy as np
        from api.catalogue import load_catalogue
        from api.routing.calibration_pool import pool_scorer
        from api.routing.dial import calibrate
        from api.routing.router import Candidate

        catalogue = load_catalogue()
        found = [catalogue.get(p, m) for p, m in pairs]
        missing = [pair for pair, model in zip(pairs, found) if model is None]
        if missing:
            raise LookupError(f"not in the catalogue: {missing}")
        self.router = router
        self.candidates = [Candidate(m.provider, m.model, m.input_price, m.output_price, m.context_length)
                           for m in found]
        quality, position = pool_scorer(router, router.featurizer)(self.candidates)
        self.schedule = calibrate(quality, position, np.ones(len(quality)))

    def choose(self, prompt: str, t: int):
        """(chosen (provider, model), its estimated USD for this prompt)."""
        # lazy: as above
        from api.routing.policy import choose, request_cost_usd
        from api.routing.text import count_tokens
        import numpy as np

        quality = self.router.predict_quality(self.router.featurizer.featurize(prompt), self.candidates)
        cost = request_cost_usd(np.array([c.input_price for c in self.candidates]),
                                np.array([c.output_price for c in self.candidates]), count_tokens(prompt))
        decision = choose(quality, cost, cost_quality_tradeoff=t, schedule=self.schedule)
        chosen = self.candidates[decision.index]
        return (chosen.provider, chosen.model), float(cost[decision.index])
