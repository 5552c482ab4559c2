"""Which LiteLLM providers the catalogue exposes, and under which names.

Users type provider names the way Not Diamond spells them (``google``, not
``gemini``; ``togetherai``, not ``together_ai``). LiteLLM's map is organised by
*endpoint* (AI Studio vs Vertex, Bedrock, Azure, dozens of resellers), so the
table below picks, per exposed provider, the first-party endpoint(s) whose
entries become catalogue models. Resellers (Bedrock, Azure, Fireworks, Groq,
DeepInfra, OpenRouter itself, ...) are left out on purpose: they would list the
same model many times under ids the first-party API does not accept. Together AI
is the one reseller exposed, because the Not Diamond API exposes it as a
provider of its own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Source:
    """One LiteLLM provider whose chat entries feed an exposed provider."""

    litellm_provider: str
    key_prefixes: tuple[str, ...] = ()
    """Prefixes LiteLLM puts in front of the model id in its map keys (stripped)."""
    require_prefix: bool = False
    """Only keys carrying a prefix are models (Together's map also holds price tiers)."""
    model_prefixes: tuple[str, ...] = ()
    """When set, only model ids starting with one of these belong to the provider."""


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    sources: tuple[Source, ...]
    """In priority order: the first source listing a model supplies its facts."""
    openrouter_vendor: str | None
    """OpenRouter's name for the vendor; None when model ids carry their own vendor."""
    aliases: tuple[str, ...] = ()
    first_party: bool = True
    key_variables: tuple[str, ...] = ()
    """The environment variables LiteLLM takes this provider's key from (any one will do), first the usual one."""


PROVIDERS: tuple[Provider, ...] = (
    Provider("openai", (Source("openai", ("openai/",)),), "openai", key_variables=("OPENAI_API_KEY",)),
    Provider("anthropic", (Source("anthropic", ("anthropic/",)),), "anthropic",
             key_variables=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")),
    Provider(
        "google",
        (
            # AI Studio (the Gemini API) is Google's first-party developer API;
            # Vertex only fills in Gemini/Gemma models AI Studio does not list.
            Source("gemini", ("gemini/",)),
            Source("vertex_ai-language-models", ("vertex_ai/",), model_prefixes=("gemini-", "gemma-")),
            Source("vertex_ai", ("vertex_ai/",), model_prefixes=("gemini-", "gemma-")),
        ),
        "google",
        aliases=("gemini", "vertex_ai", "vertex", "googleai", "google_ai_studio"),
        key_variables=("GEMINI_API_KEY", "GOOGLE_API_KEY"),  # the AI Studio route (flows/prompt_opt/llm.py)
    ),
    Provider("mistral", (Source("mistral", ("mistral/",)),), "mistralai", aliases=("mistralai",),
             key_variables=("MISTRAL_API_KEY",)),
    Provider(
        "togetherai",
        (Source("together_ai", ("together_ai/",), require_prefix=True),),
        None,
        aliases=("together_ai", "together", "together-ai"),
        first_party=False,
        key_variables=("TOGETHERAI_API_KEY", "TOGETHER_API_KEY", "TOGETHER_AI_API_KEY", "TOGETHER_AI_TOKEN"),
    ),
    Provider("cohere", (Source("cohere_chat", ("cohere/",)), Source("cohere", ("cohere/",))), "cohere",
             aliases=("cohere_chat",), key_variables=("COHERE_API_KEY", "CO_API_KEY")),
    Provider("perplexity", (Source("perplexity", ("perplexity/",)),), "perplexity",
             key_variables=("PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY")),
    Provider("deepseek", (Source("deepseek", ("deepseek/",)),), "deepseek", key_variables=("DEEPSEEK_API_KEY",)),
    Provider("xai", (Source("xai", ("xai/",)),), "x-ai", aliases=("x-ai", "grok"), key_variables=("XAI_API_KEY",)),
    Provider("moonshot", (Source("moonshot", ("moonshot/",)),), "moonshotai", aliases=("moonshotai", "kimi"),
             key_variables=("MOONSHOT_API_KEY",)),
    Provider("zai", (Source("zai", ("zai/",)),), "z-ai", aliases=("z-ai", "zhipuai", "glm"),
             key_variables=("ZAI_API_KEY",)),
    Provider("ai21", (Source("ai21", ("ai21/",)),), "ai21", key_variables=("AI21_API_KEY",)),
)

PROVIDERS_BY_NAME: dict[str, Provider] = {p.name: p for p in PROVIDERS}

_ALIASES: dict[str, str] = {
    alias: provider.name for provider in PROVIDERS for alias in (provider.name, *provider.aliases)
}


def normalise_provider(name: str) -> str | None:
    """Map a user-typed provider name (any case, LiteLLM or OpenRouter spelling) to ours."""
    return _ALIASES.get(name.strip().lower())


# Together AI model ids start with the Hugging Face organisation; OpenRouter
# names the same vendor differently. Only organisations with an OpenRouter
# vendor folder are listed; others cannot be matched.
TOGETHER_ORG_TO_OPENROUTER_VENDOR: dict[str, str] = {
    "meta-llama": "meta-llama",
    "qwen": "qwen",
    "deepseek-ai": "deepseek",
    "mistralai": "mistralai",
    "moonshotai": "moonshotai",
    "zai-org": "z-ai",
    "openai": "openai",
    "google": "google",
    "nvidia": "nvidia",
    "minimaxai": "minimax",
    "arcee-ai": "arcee-ai",
}
