// A realistic AgBOM (ACS Inspect type table): a model, two MCP servers with their tools, a skill with a digest, a
// memory store, a knowledge source and an agent capability composing them; and a Guardian on the project's real
// policy library compiled with an inventory configuration, served over real HTTP (test/acs/fixtures/harness.ts).
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AcsClient } from '../../src/client/index.ts';
import { createWasmPolicyEngine } from '../../src/policy/engine.ts';
import { buildLibraryBundle, LIBRARY_DIR } from '../../src/policy/library.ts';
import type { PolicyEngine } from '../../src/policy/types.ts';

const system = (id: string) => ({ provenance_id: `reg-${id}`, origin: 'system', source_id: 'agent-config.yaml' });

export const GPT = {
  id: 'gpt-4o-2024-08-06',
  type: 'model',
  name: 'GPT-4o',
  version: '2024-08-06',
  provider: 'OpenAI',
  endpoint: 'https://api.openai.com/v1',
  model_fields: { context_window: 128000, args: { temperature: 0.2 } },
  registration_provenance: system('model'),
};

export const TOOLS = [
  {
    id: 'urn:tool:database_query',
    type: 'tool',
    name: 'database_query',
    version: '1.4.0',
    provider: 'internal',
    tool_fields: { capability: 'datastore.read' },
    registration_provenance: system('dbq'),
  },
  {
    id: 'urn:tool:fs_read',
    type: 'tool',
    name: 'read_file',
    version: '0.9.1',
    provider: 'modelcontextprotocol',
    tool_fields: { capability: 'filesystem.read' },
    registration_provenance: system('fsr'),
  },
];

export const DB_MCP = {
  id: 'urn:mcp:db-mcp',
  type: 'mcp_server',
  name: 'db-mcp',
  version: '1.4.0',
  endpoint: 'https://mcp.internal/db',
  mcp_server_fields: { tools: ['urn:tool:database_query'] },
  registration_provenance: system('db-mcp'),
};

export const FS_MCP = {
  id: 'urn:mcp:filesystem',
  type: 'mcp_server',
  name: 'filesystem',
  version: '2025.3.0',
  endpoint: 'file:///opt/mcp/filesystem',
  mcp_server_fields: { tools: ['urn:tool:fs_read'] },
  registration_provenance: system('fs-mcp'),
};

export const SKILL = {
  id: 'urn:skill:quarterly-report',
  type: 'skill',
  name: 'quarterly-report',
  version: '3',
  skill_fields: {
    description: 'Builds the quarterly finance summary',
    definition: {
      ref: 'file:///skills/quarterly-report/SKILL.md',
      digest: 'sha256:9f2c4b7e0d1a3c5e7f9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c',
    },
    declared_capabilities: ['datastore.read'],
    tools: ['urn:tool:database_query'],
    models: ['gpt-4o-2024-08-06'],
  },
  registration_provenance: system('skill'),
};

export const MEMORY = {
  id: 'urn:memory:user-notes',
  type: 'memory_store',
  name: 'user-notes',
  memory_store_fields: { scope: 'user', store_type: 'vector', path: 'file:///var/lib/agent/notes', window_size: 50 },
  registration_provenance: system('memory'),
};

export const KNOWLEDGE = {
  id: 'urn:kb:finance-wiki',
  type: 'knowledge_source',
  name: 'finance-wiki',
  knowledge_source_fields: { source_type: 'search_index', schema_ref: 'https://kb.internal/schema/v2' },
  registration_provenance: system('kb'),
};

export const CAPABILITY = {
  id: 'urn:capability:reporting',
  type: 'agent_capability',
  name: 'reporting',
  agent_capability_fields: {
    description: 'Reads finance data and files to write reports',
    tools: ['urn:tool:database_query', 'urn:tool:fs_read'],
    mcp_servers: ['urn:mcp:db-mcp', 'urn:mcp:filesystem'],
  },
  registration_provenance: system('capability'),
};

export const REALISTIC_COMPONENTS = [GPT, ...TOOLS, DB_MCP, FS_MCP, SKILL, MEMORY, KNOWLEDGE, CAPABILITY];

export const INSPECT_METHODS = [
  'steps/sessionStart',
  'steps/userMessage',
  'steps/toolCallRequest',
  'steps/subagentStart',
  'steps/sessionEnd',
  'agbom/snapshot',
  'agbom/changed',
];

export const INSPECT_PROFILES = ['acs-core', 'acs-inspect', 'acs-inspect-dynamic', 'acs-provenance', 'acs-audit'];

export async function inspectSession(client: AcsClient, profiles = INSPECT_PROFILES): Promise<void> {
  await client.hello({ methods_implemented: INSPECT_METHODS, profiles_supported: profiles });
}

/**
 * The library (rego/) compiled with `inventory` replaced: the same build `guardian serve` runs, on a copy of the
 * library whose data.json carries the test's allow and ban lists.
 */
export async function libraryBundle(inventory: Record<string, unknown>): Promise<Uint8Array> {
  const dir = mkdtempSync(join(tmpdir(), 'agbom-rego-'));
  try {
    cpSync(LIBRARY_DIR, dir, { recursive: true });
    const data = JSON.parse(readFileSync(join(dir, 'data.json'), 'utf8')) as { acs_config: Record<string, unknown> };
    data.acs_config.inventory = inventory;
    writeFileSync(join(dir, 'data.json'), JSON.stringify(data));
    return (await buildLibraryBundle({ dir })).bundle;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** libraryBundle's engine. */
export async function libraryEngine(inventory: Record<string, unknown>): Promise<PolicyEngine> {
  return await createWasmPolicyEngine({ bundle: await libraryBundle(inventory), timeoutMs: 5000 });
}
