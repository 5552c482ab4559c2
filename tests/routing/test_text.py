"""Query text extraction and offline token counting."""

import os
import subprocess
import sys
import textwrap

from api.routing.text import bundled_tiktoken_dir, count_tokens, full_text, message_texts, routing_text


def test_bare_string_is_one_user_message():
    assert message_texts("hello") == [("user", "hello")]
    assert routing_text("hello") == "hello"
    assert message_texts("") == []


def test_chat_array_with_string_and_part_contents():
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "an answer"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe this"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "text", "text": "in one line."},
            ],
        },
    ]
    assert routing_text(messages) == "Describe this\nin one line."
    text = full_text(messages)
    assert text.startswith("You are terse.\nfirst question")
    assert "base64" not in text and "image_url" not in text


def test_non_text_only_and_missing_content_are_skipped():
    messages = [
        {"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "xx"}}]},
        {"role": "assistant", "content": None},
        {"role": "system", "content": "sys only"},
    ]
    assert message_texts(messages) == [("system", "sys only")]
    # No user turn: route on what there is.
    assert routing_text(messages) == "sys only"


def test_count_tokens_known_values():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("hello world", encoding="o200k_base") == 2
    # special-token text is counted, not rejected
    assert count_tokens("<|endoftext|>") > 1


def test_tiktoken_reads_the_bundled_copy_offline():
    bundle = bundled_tiktoken_dir()
    assert bundle is not None and (bundle / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4").is_file()
    # Fresh process, with any HTTP client made to fail: counting must not try to download, and must not import litellm.
    code = textwrap.dedent(
        """
        import os, sys, socket
        def no_net(*a, **k):
            raise AssertionError("network access attempted")
        socket.socket.connect = no_net
        socket.create_connection = no_net
        os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        from api.routing.text import count_tokens, bundled_tiktoken_dir
        assert count_tokens("The quick brown fox") == 4
        assert os.environ["TIKTOKEN_CACHE_DIR"] == str(bundled_tiktoken_dir())
        assert "litellm" not in sys.modules
        print("ok")
        """
    )
    env = dict(os.environ)
    env.pop("TIKTOKEN_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
