"""An MCP server (stdio, newline-delimited JSON-RPC) serving one AgentDojo suite's tools.

Each call runs AgentDojo's own tool function on the suite's own environment, held here: the server is what the
sidecar's gateway talks to, exactly as it would talk to an admin's real server. Which environment it holds is the
harness's to say, through a control file in its working directory (the run's workdir, the one place it may write):
`agentdojo-control.json` = {"seq", "user_task", "injection_task", "injections"}. A new `seq` loads a fresh
environment (the suite's, with those injections, initialised for that user task). After every call the server
writes the environment it holds to `agentdojo-env-<seq>.pickle`, which the harness scores with AgentDojo's checks:
the state scored is the state the calls through the gate mutated, read back from here. (A pickle, not JSON: the
workspace's models rebuild their mailbox, calendar and drive from their initial contents when validated, so a JSON
round trip would undo every call.)

Usage: server.py SUITE BENCHMARK_VERSION
"""

import json
import os
import pickle
import sys
import warnings

warnings.filterwarnings("ignore")

import yaml  # noqa: E402

# AgentDojo parses its suites' YAML with yaml.safe_load, in pure Python (0.8 s for the workspace environment); the
# same safe loader in libyaml takes a tenth of that, and every run loads one.
if getattr(yaml, "__with_libyaml__", False):
    yaml.safe_load = lambda stream: yaml.load(stream, Loader=yaml.CSafeLoader)  # noqa: E731

from agentdojo.agent_pipeline.tool_execution import tool_result_to_str  # noqa: E402
from agentdojo.functions_runtime import FunctionsRuntime  # noqa: E402
from agentdojo.task_suite.load_suites import get_suite  # noqa: E402

CONTROL = "agentdojo-control.json"


class SuiteState:
    def __init__(self, suite_name: str, version: str) -> None:
        self.suite = get_suite(version, suite_name)
        self.runtime = FunctionsRuntime(self.suite.tools)
        self.seq = None
        self.env = self.suite.load_and_inject_default_environment({})

    def refresh(self) -> None:
        """Loads the environment the control file names, when its seq changed."""
        if not os.path.exists(CONTROL):
            return
        with open(CONTROL, encoding="utf-8") as f:
            control = json.load(f)
        if control["seq"] == self.seq:
            return
        env = self.suite.load_and_inject_default_environment(control.get("injections") or {})
        user_task = control.get("user_task")
        if user_task is not None:
            env = self.suite.get_user_task_by_id(user_task).init_environment(env)
        self.env = env
        self.seq = control["seq"]
        self.dump()

    def dump(self) -> None:
        if self.seq is None:
            return
        tmp = f"agentdojo-env-{self.seq}.pickle.tmp"
        with open(tmp, "wb") as f:
            pickle.dump(self.env, f)
        os.replace(tmp, f"agentdojo-env-{self.seq}.pickle")

    def tools(self) -> list[dict]:
        return [
            {"name": fn.name, "description": fn.description, "inputSchema": fn.parameters.model_json_schema()}
            for fn in self.suite.tools
        ]

    def call(self, name: str, args: dict) -> tuple[str, bool]:
        self.refresh()
        result, error = self.runtime.run_function(self.env, name, args, raise_on_error=False)
        self.dump()
        if error is not None:
            return error, True
        return tool_result_to_str(result), False


def reply(msg_id, result=None, error=None) -> None:
    out = {"jsonrpc": "2.0", "id": msg_id}
    if error is not None:
        out["error"] = error
    else:
        out["result"] = result
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def main() -> None:
    state = SuiteState(sys.argv[1], sys.argv[2])
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, msg_id = msg.get("method"), msg.get("id")
        if msg_id is None:
            continue  # a notification (initialized, cancelled): nothing to answer
        params = msg.get("params") or {}
        if method == "initialize":
            reply(msg_id, {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"agentdojo-{sys.argv[1]}", "version": "0.1.35"},
            })
        elif method == "tools/list":
            reply(msg_id, {"tools": state.tools()})
        elif method == "tools/call":
            text, is_error = state.call(params["name"], params.get("arguments") or {})
            reply(msg_id, {"content": [{"type": "text", "text": text}], "isError": is_error})
        elif method == "ping":
            reply(msg_id, {})
        else:
            reply(msg_id, error={"code": -32601, "message": f"method not found: {method}"})


if __name__ == "__main__":
    main()
