// YAML data files read the way OPA reads them: sigs.k8s.io/yaml converts YAML to JSON through go-yaml v2.
import { parseAllDocuments } from 'yaml';

/**
 * The value of a YAML data file as OPA's loader sees it: YAML 1.1 (`yes`/`on` are booleans), only the
 * first document of a multi-document stream (go-yaml v2's Unmarshal stops after it), and application tags
 * such as CloudFormation's `!Ref` / `!GetAtt` taken as the plain scalar, sequence or mapping they tag, without
 * a warning. An empty file is `null`. Syntax errors in the first document throw, with YAML's message.
 */
export function parseYamlData(text: string): unknown {
  const docs = parseAllDocuments(text, { version: '1.1', logLevel: 'error' });
  const first = docs[0];
  if (!first) return null;
  if (first.errors.length > 0) throw first.errors[0];
  return first.toJS() ?? null;
}
