#!/usr/bin/python3
"""The policy options are declared once (services/sync/policy_options.cc); every place that states
them must agree with that declaration, as `syncopate modes --json` reports it:

- the flags of `syncopate-coordinator`, `syncopate local`, `compare` and `serve`: each option with
  its declared help;
- the chart: a `sync.<chartKey>` value with the declared default, a schema entry with the declared
  type, choices and range, and a `--<flag>=` argument of the coordinator built from that value;
  the schema's modes are the mode table's;
- docs/modes.md: a row of its table for every mode.

Usage: policy_options_test.py REPO_ROOT BIN_DIR
"""
import json
import re
import subprocess
import sys
import unittest

import yaml

ROOT, BIN = sys.argv[1], sys.argv[2]


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=60).stdout


TABLE = json.loads(run(f"{BIN}/syncopate", "modes", "--json"))
CHART = f"{ROOT}/helm/syncopate"


class PolicyOptionsTest(unittest.TestCase):
    def test_every_binary_takes_every_option_with_its_declared_help(self):
        helps = {
            "syncopate-coordinator": run(f"{BIN}/syncopate-coordinator", "--help"),
            "syncopate local": run(f"{BIN}/syncopate", "local", "--help"),
            "syncopate compare": run(f"{BIN}/syncopate", "compare", "--help"),
            "syncopate serve": run(f"{BIN}/syncopate", "serve", "--help"),
        }
        for option in TABLE["options"]:
            # The CLI's --seed is the job's one seed, the policy's among others.
            for name, text in helps.items():
                if option["flag"] == "seed" and name != "syncopate-coordinator":
                    continue
                # CLI11 writes the help beside the flag, or below it when the flag is long.
                found = re.search(rf"\n\s+--{re.escape(option['flag'])}\b.*\n.*", text)
                self.assertIsNotNone(found, f"{name} has no --{option['flag']}")
                self.assertIn(option["help"], found.group(0), f"{name} --{option['flag']}")

    def test_the_charts_values_and_schema_state_the_declared_defaults_and_ranges(self):
        with open(f"{CHART}/values.yaml") as f:
            values = yaml.safe_load(f)["sync"]
        with open(f"{CHART}/values.schema.json") as f:
            schema = json.load(f)["properties"]["sync"]["properties"]
        self.assertEqual(schema["mode"]["enum"], [m["name"] for m in TABLE["modes"]])
        self.assertIn(values["mode"], schema["mode"]["enum"])
        for option in TABLE["options"]:
            key = option["chart_key"]
            self.assertIn(key, values, f"values.yaml has no sync.{key}")
            self.assertEqual(values[key], option["default"], f"sync.{key}'s default")
            entry = schema.get(key)
            self.assertIsNotNone(entry, f"the schema has no sync.{key}")
            if option["choices"]:
                self.assertEqual(entry.get("enum"), option["choices"], f"sync.{key}'s choices")
                continue
            types = entry["type"] if isinstance(entry["type"], list) else [entry["type"]]
            self.assertIn(option["type"], types, f"sync.{key}'s type")
            self.assertEqual("null" in types, option["default"] is None, f"sync.{key} nullable")
            bound = "exclusiveMinimum" if option["min_exclusive"] else "minimum"
            self.assertEqual(entry.get(bound), option["min"], f"sync.{key}'s {bound}")
            self.assertEqual(entry.get("maximum"), option["max"], f"sync.{key}'s maximum")

    def test_the_coordinator_in_the_chart_gets_every_option(self):
        with open(f"{CHART}/templates/coordinator/deployment.yaml") as f:
            template = f.read()
        for option in TABLE["options"]:
            self.assertIn(f"- --{option['flag']}={{{{ .Values.sync.{option['chart_key']} }}}}",
                          template, f"the coordinator's --{option['flag']}")

    def test_the_modes_page_has_a_row_for_every_mode(self):
        with open(f"{ROOT}/docs/modes.md") as f:
            page = f.read()
        for mode in TABLE["modes"]:
            self.assertRegex(page, rf"\n\| `{re.escape(mode['name'])}` \|", mode["name"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
