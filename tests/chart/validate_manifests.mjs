// Validates every object of rendered Kubernetes manifests against the Kubernetes (1.27+) and
// Prometheus Operator schemas of the npm kubernetes-models packages.
//   node validate_manifests.mjs MODULES_DIR FILE...   exits 1 listing each invalid or unknown object
//   node validate_manifests.mjs MODULES_DIR --self-test   checks that a broken object is rejected
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modulesDir, ...files] = process.argv.slice(2);
if (!modulesDir || files.length === 0) {
  console.error("usage: validate_manifests.mjs MODULES_DIR (FILE... | --self-test)");
  process.exit(2);
}
const nodeModules = path.join(path.resolve(modulesDir), "node_modules");
const YAML = createRequire(path.join(nodeModules, "x.js"))("yaml");
// The models are ES modules that export only "import" paths: load their files directly.
const load = async (name) => import(pathToFileURL(path.join(nodeModules, name, "index.js")).href);

// apiVersion -> the module holding its kinds.
const MODULES = {
  "v1": "kubernetes-models/v1",
  "apps/v1": "kubernetes-models/apps/v1",
  "batch/v1": "kubernetes-models/batch/v1",
  "policy/v1": "kubernetes-models/policy/v1",
  "networking.k8s.io/v1": "kubernetes-models/networking.k8s.io/v1",
  "rbac.authorization.k8s.io/v1": "kubernetes-models/rbac.authorization.k8s.io/v1",
  "monitoring.coreos.com/v1": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1",
};

async function validate(object) {
  const module = MODULES[object.apiVersion];
  if (!module) return `unknown apiVersion ${object.apiVersion}`;
  const Kind = (await load(module))[object.kind];
  if (!Kind) return `unknown kind ${object.apiVersion}/${object.kind}`;
  try {
    new Kind(object).validate();
    return null;
  } catch (error) {
    return error.message;
  }
}

if (files[0] === "--self-test") {
  const broken = { apiVersion: "apps/v1", kind: "StatefulSet", metadata: { name: "x" },
                   spec: { replicas: "3", serviceName: "x", selector: {}, template: {} } };
  const error = await validate(broken);
  if (!error || !error.includes("replicas")) {
    console.error(`self-test: a StatefulSet with replicas "3" was not rejected (${error})`);
    process.exit(1);
  }
  console.log(`self-test: rejected as expected: ${error}`);
  process.exit(0);
}

let failures = 0;
let checked = 0;
for (const file of files) {
  for (const document of YAML.parseAllDocuments(readFileSync(file, "utf8"))) {
    if (document.errors.length) {
      console.error(`${file}: YAML error: ${document.errors[0].message}`);
      failures++;
      continue;
    }
    const object = document.toJS();
    if (object === null) continue;
    checked++;
    const error = await validate(object);
    if (error) {
      console.error(`${file}: ${object.kind}/${object.metadata?.name}: ${error}`);
      failures++;
    }
  }
}
console.log(`${checked} object(s) checked, ${failures} invalid`);
process.exit(failures || checked === 0 ? 1 : 0);
