"""Which injection tasks send the user's data out, computed from what their calls do (docs/agentdojo.md).

For a suite the harness keeps no list for, an injection task counts as exfiltration when one of the attacker's calls
(its ground truth, or the harness's own calls for a task shipped without one) carries both:

- a destination of the attacker's: a whole argument value (a recipient, a URL, an account) that is an address, a
  host or an account number, that the task's GOAL names and that the user's environment does not hold; and
- the user's data: a word of another of its text arguments that the user's environment holds and the GOAL does not
  (a code read from a mail, a payee's IBAN, a message's words), or a reference to one of the user's objects nested
  in an argument (an attachment's file id).

So an attack that acts on the attacker's own words (a phishing link, a payment of an amount the attacker names, an
invitation) is not exfiltration, nor one that sends the attacker's text to the user's own contacts. It sees what the
calls carry, not what the GOAL asks: a ground truth that sends nothing of the user's is not counted (banking's
injection_task_1 sends "Dinner with me", not the IBAN its GOAL asks for).
"""

import json
import re
import sys

# An e-mail address, a host or URL, an account number (two letters and ten digits or more).
IDENTIFIER = re.compile(r"^(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:https?://)?[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}(?:/\S*)?|[A-Z]{2}\d{10,})$")
WORD = re.compile(r"[A-Za-z0-9]+")


def words(text: str) -> set:
    """The words that can identify data: four characters or more with a letter, or five digits or more (a code)."""
    return {w.lower() for w in WORD.findall(text) if (len(w) >= 4 and not w.isdigit()) or (w.isdigit() and len(w) >= 5)}


def _leaves(value, key: str = "", depth: int = 0):
    """(key, value, depth) of every scalar in an argument, depth 0 for the argument itself."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k), depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v, key, depth + 1)
    else:
        yield key, value, depth


def _environment_strings(value, out: set) -> set:
    if isinstance(value, dict):
        for v in value.values():
            _environment_strings(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _environment_strings(v, out)
    elif isinstance(value, str):
        out.add(value)
    return out


class Environment:
    """What the user's environment holds: its text, its words, its string values (ids among them)."""

    def __init__(self, dumped: dict) -> None:
        self.strings = _environment_strings(dumped, set())
        self.text = "\n".join(self.strings)
        self.words = words(self.text)


def carries_user_data(call_args: dict, goal: str, env: Environment) -> tuple | None:
    """(destination, data) when one call sends the user's data to a destination only the attacker's GOAL names."""
    goal_words = words(goal)
    destinations, data = [], []
    for name, arg in call_args.items():
        for key, value, depth in _leaves(arg, name):
            if not isinstance(value, str):
                continue
            if IDENTIFIER.match(value) and value in goal and value not in env.text:
                destinations.append(value)
                continue
            data += sorted(w for w in words(value) if w in env.words and w not in goal_words)
            if depth > 1 and key.endswith("id") and value in env.strings:
                data.append(f"{key}={value}")
    return (destinations[0], data[:3]) if destinations and data else None


def exfiltration_tasks(goals_and_calls: dict, env: Environment) -> dict:
    """{injection task: (tool, destination, data)} for those whose calls send the user's data out."""
    out = {}
    for task_id, (goal, calls) in goals_and_calls.items():
        for function, args in calls:
            found = carries_user_data(args, goal, env)
            if found is not None:
                out[task_id] = (function, *found)
                break
    return out


def suite_exfiltration(suite, attack_calls) -> dict:
    """A suite's exfiltration tasks, each with the call that shows it; attack_calls(injection_task, environment) gives
    the attacker's calls (the ground truth, or the harness's own), run on the suite's environment with no injection."""
    env = suite.load_and_inject_default_environment({})
    goals_and_calls = {}
    for task_id, task in suite.injection_tasks.items():
        calls = attack_calls(task_id, env.model_copy(deep=True))
        goals_and_calls[task_id] = (task.GOAL, [(c.function, dict(c.args)) for c in calls])
    found = exfiltration_tasks(goals_and_calls, Environment(env.model_dump()))
    return {t: found[t] for t in sorted(found, key=lambda t: int(re.sub(r"\D", "", t) or 0))}


if __name__ == "__main__":
    # python exfiltration.py VERSION SUITE...: the computed lists, as JSON (what the harness uses for an unlisted suite).
    from harness import SuitePlanAttacks  # noqa: E402

    version, names = sys.argv[1], sys.argv[2:]
    print(json.dumps({n: suite_exfiltration(*SuitePlanAttacks.of(version, n)) for n in names}))
