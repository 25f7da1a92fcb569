// Validates Kubernetes manifests against the API schema, strictly: node validate.mjs FILE...
//
// Two maintained libraries, each for what it checks:
// - kubernetes-models: validators compiled from the Kubernetes OpenAPI schema (types, enums,
//   required fields, formats). Its schemas allow unknown fields, so a misspelt field passes it.
// - @kubernetes/client-node: the official client's models generated from the same OpenAPI
//   document, with each type's field list; walking it rejects any field a type does not have,
//   which is what the API server does with `kubectl apply --validate=strict`.
// The agent-sandbox kinds are not in either: their wrapper is checked with ajv against
// agent_sandbox.schema.json (the fields of the project's v1alpha1 API reference) and their pod
// template as a Kubernetes PodTemplateSpec.
// Prints one line per object, every error with its path, then "N passed, M failed"; exits 1 when
// any object is invalid.
import { readFileSync } from "node:fs";
import * as k8s from "@kubernetes/client-node";
import Ajv from "ajv";
import { parseAllDocuments } from "yaml";

const kPrimitive = new Set(["string", "number", "boolean", "Date", "any", "object", "IntOrString"]);
const kAgentSandboxGroup = "extensions.agents.x-k8s.io/v1alpha1";

// Fields of `value` that client-node's type `type` lacks, recursively, as "path: message".
function UnknownFields(value, type, path) {
  if (value === null || value === undefined || kPrimitive.has(type)) return [];
  const array = type.match(/^Array<(.+)>$/);
  if (array) {
    if (!Array.isArray(value)) return [];  // the type check reports it
    return value.flatMap((item, i) => UnknownFields(item, array[1], `${path}[${i}]`));
  }
  const map = type.match(/^\{ \[key: string\]: (.+); \}$/);
  if (map) {
    return Object.entries(value).flatMap(
      ([key, item]) => UnknownFields(item, map[1], `${path}.${key}`));
  }
  const model = k8s[type];
  if (!model || typeof model.getAttributeTypeMap !== "function") {
    return [`${path}: the validator does not know the type ${type}`];
  }
  if (typeof value !== "object" || Array.isArray(value)) return [];
  const fields = new Map(model.getAttributeTypeMap().map((attr) => [attr.baseName, attr.type]));
  return Object.entries(value).flatMap(([key, item]) => {
    if (!fields.has(key)) {
      const known = [...fields.keys()].join(", ");
      return [`${path}.${key}: unknown field of ${type} (known: ${known})`];
    }
    return UnknownFields(item, fields.get(key), `${path}.${key}`);
  });
}

// The kubernetes-models class for apiVersion/kind, e.g. apps/v1 Deployment.
async function ModelClass(apiVersion, kind) {
  try {
    return (await import(`kubernetes-models/${apiVersion}/${kind}`))[kind];
  } catch {
    return null;
  }
}

function SchemaErrors(Model, object, path) {
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return error.message.split(/,\s*(?=data)/)
      .map((line) => `${path}: ${line.replace(/^data/, "")}`);
  }
}

// A core API object: the OpenAPI types, then the field names.
async function CoreErrors(object, path) {
  const { apiVersion, kind } = object;
  const Model = await ModelClass(apiVersion, kind);
  const version = apiVersion.split("/").pop();
  const clientType = version.charAt(0).toUpperCase() + version.slice(1) + kind;
  if (!Model || !k8s[clientType]) return [`${path}: unknown apiVersion/kind ${apiVersion} ${kind}`];
  return [...SchemaErrors(Model, object, path), ...UnknownFields(object, clientType, path)];
}

const ajv = new Ajv({ allErrors: true, strict: true });
const agentSandboxSchemas = JSON.parse(
  readFileSync(new URL("./agent_sandbox.schema.json", import.meta.url), "utf8"));
const agentSandboxValidators = Object.fromEntries(
  Object.entries(agentSandboxSchemas.kinds).map(([kind, schema]) => [kind, ajv.compile(schema)]));

async function AgentSandboxErrors(object, path) {
  const validator = agentSandboxValidators[object.kind];
  if (!validator) return [`${path}: unknown agent-sandbox kind ${object.kind}`];
  const errors = validator(object) ? [] : validator.errors.map((e) => {
    const extra = e.params.additionalProperty ? ` (${e.params.additionalProperty})` : "";
    return `${path}${e.instancePath.replaceAll("/", ".")}: ${e.message}${extra}`;
  });
  const template = object.spec?.podTemplate;
  if (template) {
    const PodTemplateSpec = await ModelClass("v1", "PodTemplateSpec");
    const at = `${path}.spec.podTemplate`;
    errors.push(...SchemaErrors(PodTemplateSpec, template, at),
      ...UnknownFields(template, "V1PodTemplateSpec", at));
  }
  return errors;
}

let valid = 0;
let invalid = 0;
for (const file of process.argv.slice(2)) {
  const documents = parseAllDocuments(readFileSync(file, "utf8"), { uniqueKeys: true });
  for (const [index, document] of documents.entries()) {
    const path = `${file}#${index}`;
    const problems = document.errors.map((e) => `${path}: YAML: ${e.message}`);
    const object = problems.length ? null : document.toJS();
    if (object && (typeof object.apiVersion !== "string" || typeof object.kind !== "string")) {
      problems.push(`${path}: apiVersion and kind are required`);
    } else if (object) {
      const check = object.apiVersion === kAgentSandboxGroup ? AgentSandboxErrors : CoreErrors;
      const name = `${path}(${object.kind} ${object.metadata?.name ?? "?"})`;
      problems.push(...await check(object, name));
    }
    if (problems.length) {
      invalid += 1;
      for (const problem of problems) console.log(`INVALID ${problem}`);
    } else {
      valid += 1;
      console.log(`valid   ${path} ${object.kind} ${object.metadata?.name ?? ""}`);
    }
  }
}
console.log(`${valid} passed, ${invalid} failed`);
process.exit(invalid ? 1 : 0);
