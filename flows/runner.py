"""The flow runner: serves every deployment in flows.registry until stopped (`python -m flows.runner`)."""

from __future__ import annotations

from prefect import serve

from flows.registry import deployments


def main() -> None:
    serve(*deployments(), limit=4)


if __name__ == "__main__":
    main()
