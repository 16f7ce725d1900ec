"""probe_context against real HTTP: each server family's shape, and junk that must be ignored."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from loopagent.client.probe import api_root, probe_context, server_kind
from tests.fakeserver import FakeServer, Reply

# Bodies shaped like the real servers' (trimmed, keys as they send them).
LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 8192, "n_predict": -1, "model": "gemma.gguf",
                                               "temperature": 0.8},
               "total_slots": 1, "chat_template": "{{ bos_token }}..."}
LLAMA_PROPS_TOP = {"n_ctx": 4096, "total_slots": 1, "model_path": "/models/q.gguf"}
VLLM_MODELS = [{"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model", "created": 1717000000, "owned_by": "vllm",
                "root": "Qwen/Qwen2.5-7B-Instruct", "parent": None, "max_model_len": 32768,
                "permission": [{"id": "modelperm-1", "object": "model_permission"}]}]
LMSTUDIO = {"object": "list", "data": [
    {"id": "qwen2.5-7b-instruct", "object": "model", "type": "llm", "publisher": "lmstudio-community",
     "arch": "qwen2", "quantization": "Q4_K_M", "state": "loaded", "max_context_length": 32768,
     "loaded_context_length": 4096},
    {"id": "text-embedding-nomic", "object": "model", "type": "embeddings", "state": "not-loaded",
     "max_context_length": 2048}]}
OLLAMA_SHOW = {"modelfile": "FROM llama3.2", "parameters": 'stop "<|eot_id|>"',
               "details": {"family": "llama", "parameter_size": "3.2B"},
               "model_info": {"general.architecture": "llama", "general.parameter_count": 3212749888,
                              "llama.context_length": 131072, "llama.embedding_length": 3072}}


def probe(srv: FakeServer, model: str = "m", provider: str = "openai", timeout: float = 3.0):
    with httpx.Client() as http:
        return probe_context(http, srv.url, model, provider, timeout)


def test_llamacpp_props_slot_setting():
    with FakeServer(props=LLAMA_PROPS) as srv:
        assert probe(srv) == (8192, "llama.cpp /props")
        assert srv.gets == ["/props"]  # the first answer ends the probe: one request


def test_llamacpp_props_top_level_n_ctx():
    with FakeServer(props=LLAMA_PROPS_TOP) as srv:
        assert probe(srv) == (4096, "llama.cpp /props")


def test_vllm_model_list_names_the_model_or_the_only_one():
    with FakeServer(models=VLLM_MODELS) as srv:
        assert probe(srv, "Qwen/Qwen2.5-7B-Instruct") == (32768, "vLLM /v1/models")
        assert probe(srv, "default") == (32768, "vLLM /v1/models")  # the only model
        assert srv.gets[:2] == ["/props", "/v1/models"]
    two = VLLM_MODELS + [{**VLLM_MODELS[0], "id": "other", "max_model_len": 8192}]
    with FakeServer(models=two) as srv:
        assert probe(srv, "other") == (8192, "vLLM /v1/models")
        assert probe(srv, "unknown")[0] is None  # two models, neither named: no guess


def test_lmstudio_loaded_length_else_maximum():
    with FakeServer(routes={"/api/v0/models": LMSTUDIO}) as srv:
        assert probe(srv, "qwen2.5-7b-instruct") == (4096, "LM Studio /api/v0/models")
        assert probe(srv, "text-embedding-nomic") == (2048, "LM Studio /api/v0/models")


def test_ollama_show_context_length_and_num_ctx():
    with FakeServer(routes={"/api/show": OLLAMA_SHOW}) as srv:
        assert probe(srv, "llama3.2", provider="ollama") == (131072, "Ollama /api/show")
        assert srv.posts[-1] == ("/api/show", {"model": "llama3.2"})
        # Through Ollama's OpenAI endpoint the model's length is not the window (Ollama's default is):
        assert probe(srv, "llama3.2") == (None, "")
    with_ctx = {**OLLAMA_SHOW, "parameters": 'num_ctx                        8192\nstop "<|eot_id|>"'}
    with FakeServer(routes={"/api/show": with_ctx}) as srv:
        assert probe(srv, "llama3.2", provider="ollama") == (8192, "Ollama /api/show")
        assert srv.gets == []  # provider ollama asks Ollama only
        assert probe(srv, "llama3.2") == (8192, "Ollama /api/show")  # a num_ctx set in the model holds for /v1 too


@pytest.mark.parametrize("junk", [
    {"default_generation_settings": {"n_ctx": -1}},
    {"default_generation_settings": {"n_ctx": 10 ** 12}},
    {"default_generation_settings": {"n_ctx": "lots"}},
    {"default_generation_settings": {"n_ctx": 8192.5}},
    {"default_generation_settings": {"n_ctx": True}},
    {"default_generation_settings": {"n_ctx": None}, "n_ctx": [8192]},
    {"default_generation_settings": "8192"},
    [8192], "8192", None, 0,
])
def test_junk_props_are_ignored(junk):
    with FakeServer(props=Reply(body=json.dumps(junk).encode())) as srv:
        assert probe(srv) == (None, "")
        assert srv.gets == ["/props", "/v1/models", "/api/v0/models"]  # then /api/show: one each


def test_html_404_and_errors_are_nothing():
    html = Reply(status=200, body=b"<html><body>It works!</body></html>", headers={"Content-Type": "text/html"})
    broken = Reply(status=500, body=json.dumps(LLAMA_PROPS).encode())  # a right body with a wrong status
    with FakeServer(props=html, models=broken, routes={"/api/show": Reply(status=404, body=b"no")}) as srv:
        assert probe(srv) == (None, "")
    with FakeServer(models=[{"id": "m", "max_model_len": "32768"}]) as srv:
        assert probe(srv) == (32768, "vLLM /v1/models")  # a number written as a string is still a number


def test_nothing_listening_and_a_silent_server_do_not_raise():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with httpx.Client() as http:
        assert probe_context(http, f"http://127.0.0.1:{port}/v1", "m") == (None, "")
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        with httpx.Client() as http:
            assert probe_context(http, url, "m", timeout=0.2) == (None, "")


def test_api_root_drops_v1_only():
    assert api_root("http://h:8080/v1") == "http://h:8080"
    assert api_root("http://h:8080/v1/") == "http://h:8080"
    assert api_root("http://h:1234/api") == "http://h:1234/api"


def test_a_silent_server_costs_one_timeout_not_four():
    import time

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        with httpx.Client() as http:
            start = time.monotonic()
            assert probe_context(http, url, "m", timeout=0.5) == (None, "")
            assert time.monotonic() - start < 1.5  # four timeouts would take 2 s


@pytest.mark.parametrize(("owner", "label", "provider", "kind"), [
    ("me", "", "openai", "llama-cpp-python"), ("llamacpp", "", "openai", "llama-server"),
    ("vllm", "", "openai", "vLLM"), ("library", "", "openai", "Ollama"), ("organization_owner", "", "openai", "LM Studio"),
    ("fake", "llama.cpp /props", "openai", "llama-server"), ("fake", "vLLM /v1/models", "openai", "vLLM"),
    ("fake", "", "ollama", "Ollama"), ("fake", "", "openai", ""), (None, "", "openai", ""),
])
def test_the_server_kind_from_its_model_list_or_its_context_endpoint(owner, label, provider, kind):
    models = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": owner}]}
    assert server_kind(models, label, provider) == kind
    assert server_kind("not json", "", "openai") == "" and server_kind({"data": [1, "x"]}) == ""
