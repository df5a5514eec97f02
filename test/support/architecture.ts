// The architecture's rules, checked over the real import graph (docs/architecture.md, "The rules
// the import graph keeps"). The TypeScript compiler parses every module of src/, tools/, bin/ and
// scripts/ and its type checker resolves what each import names: an aliased import
// (`postLedger as post`), a namespace import, a re-export (`export *`, `export { x as y }`) and a
// dynamic import are all edges; a write is a call found in the syntax tree, not on a line, and a
// table held in a variable is read from its type. test/architecture.test.ts runs this over the tree
// and over each evasion kept in test/fixtures/architecture/.

import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/**
 * The money writes: the one place that inserts, updates or deletes rows of the money tables. Only
 * tools/ (and tools/system/) import it; everything else moves money by running a tool.
 */
export const MONEY_WRITES = 'src/db/money-writes/';

/** The tables whose rows are money: a write to one is a money write. */
export const MONEY_TABLES = [
  'payments',
  'payment_attempts',
  'payouts',
  'refunds',
  'revenue_shares',
  'ledger_accounts',
  'ledger_postings',
  'ledger_entries',
  'transfers',
  'settlement_batches',
  'settlement_batch_transfers',
] as const;

/**
 * Columns of a money table that move no money, which a worker may set itself: a lease (`checked_at`)
 * and what a provider said about an attempt it started (its reference, the payer's page, a signed
 * event not yet confirmed). Any other column of these tables, and any insert or delete, is money.
 */
const BOOKKEEPING_COLUMNS: Record<string, readonly string[]> = {
  payment_attempts: ['checked_at', 'provider_reference', 'payer_url', 'payer_hint', 'unconfirmed_event_at'],
  refunds: ['checked_at'],
};

/** Folders no module under tools/ may import from: the workers and hosts that run system tools. */
export const ABOVE_TOOLS = ['src/settlement/', 'src/payments/', 'src/checkout/'];

/** Modules of tools/ that describe tools and their outputs and move no money: anything in them may be imported. */
const SHARED_FROM_TOOLS = ['tools/registry.ts', 'tools/schemas.ts', 'tools/payment-output.ts'];

const SCANNED = ['src', 'tools', 'bin', 'scripts'];
const SOURCE = /\.(ts|mts|mjs|js)$/;
const KYSELY_WRITES = new Set(['insertInto', 'updateTable', 'deleteFrom', 'mergeInto', 'replaceInto']);
/** A write statement in SQL text, and the table it writes (quoted, schema-qualified or not). */
const SQL_WRITE =
  /\b(update|insert\s+into|delete\s+from|merge\s+into)\s+(?:only\s+)?(?:"?public"?\s*\.\s*)?"?(\w+|⁇)"?/gi;
/** Text that is itself a write statement, from its first word. */
const STATEMENT_WRITE =
  /^\s*(update|insert\s+into|delete\s+from|merge\s+into)\s+(?:only\s+)?(?:"?public"?\s*\.\s*)?"?(\w+)"?(?:\s|\(|$)/i;
/** Stands for a table name the checker could not read (a variable of type string). */
const UNKNOWN = '⁇';

export type Rule = 'money import' | 'money write' | 'tools above' | 'cycle';

export interface Finding {
  rule: Rule;
  /** The module, relative to the root, with `/` separators. */
  file: string;
  line: number;
  what: string;
}

export interface Graph {
  /** Each module's imports of modules of ours: `types` when only types are named (gone at run time). */
  edges: Map<string, { target: string; types: boolean; line: number }[]>;
}

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    if (statSync(path).isDirectory()) return walk(path);
    return SOURCE.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const isTest = (file: string): boolean => /\.test\.ts$/.test(file);
const underTools = (file: string): boolean => file.startsWith('tools/');

/** Everything the rules say about the tree at `root` (an empty list: the tree keeps them). */
export function checkArchitecture(root: string): Finding[] {
  return analyseTree(root).findings;
}

/** The tree's import graph and what the rules say about it. */
export function analyseTree(root: string): { findings: Finding[]; graph: Graph } {
  const files = SCANNED.flatMap((top) => walk(join(root, top)));
  const program = ts.createProgram(files, {
    allowJs: true,
    checkJs: false,
    noEmit: true,
    // Our modules only: what a package exports is never a money write, and not loading their
    // declarations keeps this quick.
    noResolve: true,
    noLib: true,
    types: [],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    resolveJsonModule: true,
  });
  const checker = program.getTypeChecker();
  const rel = (path: string): string => relative(root, path).split(sep).join('/');
  const findings: Finding[] = [];
  const graph: Graph = { edges: new Map() };
  const sources = files.map((file) => program.getSourceFile(file)).filter((s): s is ts.SourceFile => !!s);

  for (const source of sources) {
    const file = rel(source.fileName);
    const edges: { target: string; types: boolean; line: number }[] = [];
    graph.edges.set(file, edges);
    const lineOf = (node: ts.Node): number => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    const ownModule = file.startsWith(MONEY_WRITES);

    const edge = (specifier: ts.Expression, types: boolean, at: ts.Node): void => {
      // A path built at run time (bin/run-ts.mjs's script) names no module of ours to follow.
      if (!ts.isStringLiteralLike(specifier)) return;
      const target = resolveSpecifier(dirname(source.fileName), specifier.text);
      if (target !== undefined) edges.push({ target: rel(target), types, line: lineOf(at) });
    };

    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node)) {
        const clause = node.importClause;
        const types =
          !!clause &&
          (clause.isTypeOnly ||
            (!clause.name &&
              !!clause.namedBindings &&
              ts.isNamedImports(clause.namedBindings) &&
              clause.namedBindings.elements.length > 0 &&
              clause.namedBindings.elements.every((e) => e.isTypeOnly)));
        edge(node.moduleSpecifier, types, node);
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
        const types =
          node.isTypeOnly ||
          (!!node.exportClause &&
            ts.isNamedExports(node.exportClause) &&
            node.exportClause.elements.length > 0 &&
            node.exportClause.elements.every((e) => e.isTypeOnly));
        edge(node.moduleSpecifier, types, node);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const [specifier] = node.arguments;
        if (specifier && ts.isStringLiteralLike(specifier)) edge(specifier, false, node);
      } else if (ts.isImportTypeNode(node)) {
        // `typeof import('./x.ts')`: a type.
        const argument = node.argument;
        if (ts.isLiteralTypeNode(argument) && ts.isStringLiteral(argument.literal)) edge(argument.literal, true, node);
      }
      if (!ownModule && !isTest(file)) {
        for (const what of moneyWrites(node, checker)) {
          findings.push({ rule: 'money write', file, line: lineOf(node), what });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }

  // (a) Who reaches the money writes: an import of the module itself, or of a name another module
  // re-exports from it (followed through every `export *` and `export { x as y }` to its declaration).
  for (const source of sources) {
    const file = rel(source.fileName);
    if (underTools(file) || file.startsWith(MONEY_WRITES)) continue;
    // A test of the money writes sits beside them and may import them.
    for (const { target, line } of graph.edges.get(file) ?? []) {
      if (target.startsWith(MONEY_WRITES)) {
        findings.push({ rule: 'money import', file, line, what: `imports ${target}` });
        continue;
      }
      const reached = moneyExportsOf(program, checker, join(root, target), root);
      if (reached.length > 0) {
        findings.push({
          rule: 'money import',
          file,
          line,
          what: `imports ${target}, which re-exports ${reached.join(', ')}`,
        });
      }
    }
  }

  // (a, continued) Outside tools/, what is taken from tools/ is a tool (run through the pipeline),
  // a list of tools, a schema or a constant: never a helper that writes money outside a tool's run.
  // The same for what is passed on from tools/ (`export { x } from`, `export *`), and a module of
  // tools/ loaded at run time (`await import(…)`), which hands over whatever it exports, is refused.
  for (const source of sources) {
    const file = rel(source.fileName);
    if (underTools(file) || isTest(file)) continue;
    const lineOf = (node: ts.Node): number => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    /** The module of tools/ a specifier names, unless it is one whose every export may be taken. */
    const fromTools = (specifier: ts.Expression | undefined): string | undefined => {
      if (!specifier || !ts.isStringLiteralLike(specifier)) return undefined;
      const target = resolveSpecifier(dirname(source.fileName), specifier.text);
      if (!target || !underTools(rel(target)) || SHARED_FROM_TOOLS.includes(rel(target))) return undefined;
      return rel(target);
    };
    const takes = (name: ts.Identifier | ts.StringLiteral, target: string, line: number, verb: string): void => {
      const symbol = checker.getSymbolAtLocation(name);
      const original = symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const declaration = original?.valueDeclaration ?? original?.declarations?.[0];
      if (declaration && isToolOrConstant(declaration, checker)) return;
      const taken = original?.name ?? name.text;
      findings.push({ rule: 'money import', file, line, what: `${verb} ${taken} from ${target}, which is not a tool` });
    };
    for (const statement of source.statements) {
      if (ts.isImportDeclaration(statement)) {
        const target = fromTools(statement.moduleSpecifier);
        const clause = statement.importClause;
        if (!target || !clause || clause.isTypeOnly) continue;
        const line = lineOf(statement);
        if (clause.name) takes(clause.name, target, line, 'imports');
        if (clause.namedBindings && ts.isNamespaceImport(clause.namedBindings)) {
          findings.push({ rule: 'money import', file, line, what: `imports all of ${target}, not only its tools` });
        } else if (clause.namedBindings) {
          for (const e of clause.namedBindings.elements) if (!e.isTypeOnly) takes(e.name, target, line, 'imports');
        }
      } else if (ts.isExportDeclaration(statement)) {
        const target = fromTools(statement.moduleSpecifier);
        if (!target || statement.isTypeOnly) continue;
        const line = lineOf(statement);
        const clause = statement.exportClause;
        if (!clause || ts.isNamespaceExport(clause)) {
          findings.push({ rule: 'money import', file, line, what: `re-exports all of ${target}, not only its tools` });
        } else {
          for (const e of clause.elements) {
            if (!e.isTypeOnly) takes(e.propertyName ?? e.name, target, line, 're-exports');
          }
        }
      }
    }
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const target = fromTools(node.arguments[0]);
        if (target) {
          findings.push({
            rule: 'money import',
            file,
            line: lineOf(node),
            what: `imports ${target} at run time, all of it, not only its tools`,
          });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }

  // (c) tools/ sits below the workers and hosts that run it.
  for (const [file, edges] of graph.edges) {
    // A tool's test may drive the worker or the rail it runs under (the sandbox rail pays its payment).
    if (!underTools(file) || isTest(file)) continue;
    for (const { target, line } of edges) {
      if (ABOVE_TOOLS.some((folder) => target.startsWith(folder))) {
        findings.push({ rule: 'tools above', file, line, what: `imports ${target}` });
      }
    }
  }

  // (d) No circle of imports, types included: a circle of types is still two modules a reader
  // cannot understand one before the other.
  const runtime = new Map<string, string[]>();
  for (const [file, edges] of graph.edges) {
    if (isTest(file) || !(file.startsWith('src/') || underTools(file))) continue;
    runtime.set(
      file,
      edges.map((e) => e.target),
    );
  }
  for (const cycle of cycles(runtime)) {
    findings.push({ rule: 'cycle', file: cycle[0]!, line: 0, what: `circle of imports: ${cycle.join(' → ')}` });
  }
  return { findings, graph };
}

/**
 * A tool (`defineTool(…)`), or a constant named in capitals whose value is written out: a literal,
 * or an array or object of literals and tools (a list of tools, a limit). A capitalised name alone
 * is not enough: `export const POST_IT = postLedger` hands a money write on.
 */
function isToolOrConstant(declaration: ts.Declaration, checker: ts.TypeChecker): boolean {
  if (!ts.isVariableDeclaration(declaration) || !ts.isIdentifier(declaration.name)) return false;
  const init = declaration.initializer;
  if (!init) return false;
  if (isToolDefinition(init)) return true;
  return /^[A-Z][A-Z0-9_]*$/.test(declaration.name.text) && isWrittenOut(init, checker, 0);
}

/** An expression without its `as …`, `satisfies …` and parentheses. */
function bare(expr: ts.Expression): ts.Expression {
  while (
    ts.isAsExpression(expr) ||
    ts.isSatisfiesExpression(expr) ||
    ts.isParenthesizedExpression(expr) ||
    ts.isTypeAssertionExpression(expr)
  ) {
    expr = expr.expression;
  }
  return expr;
}

function isToolDefinition(expr: ts.Expression): boolean {
  const call = bare(expr);
  return ts.isCallExpression(call) && ts.isIdentifier(call.expression) && call.expression.text === 'defineTool';
}

/** A literal, an array or object of them and of tools, or a name of one: nothing that runs. */
function isWrittenOut(expr: ts.Expression, checker: ts.TypeChecker, depth: number): boolean {
  if (depth > 8) return false;
  const e = bare(expr);
  if (
    ts.isStringLiteralLike(e) ||
    ts.isNumericLiteral(e) ||
    ts.isBigIntLiteral(e) ||
    e.kind === ts.SyntaxKind.TrueKeyword ||
    e.kind === ts.SyntaxKind.FalseKeyword ||
    e.kind === ts.SyntaxKind.NullKeyword
  ) {
    return true;
  }
  if (ts.isPrefixUnaryExpression(e)) {
    return (
      (e.operator === ts.SyntaxKind.MinusToken || e.operator === ts.SyntaxKind.PlusToken) &&
      (ts.isNumericLiteral(e.operand) || ts.isBigIntLiteral(e.operand))
    );
  }
  if (isToolDefinition(e)) return true;
  if (ts.isArrayLiteralExpression(e)) return e.elements.every((x) => isWrittenOut(x, checker, depth + 1));
  if (ts.isObjectLiteralExpression(e)) {
    return e.properties.every((p) => {
      if (ts.isPropertyAssignment(p)) {
        return !ts.isComputedPropertyName(p.name) && isWrittenOut(p.initializer, checker, depth + 1);
      }
      if (ts.isShorthandPropertyAssignment(p)) return isWrittenOut(p.name, checker, depth + 1);
      return false;
    });
  }
  if (ts.isIdentifier(e)) {
    // A name of a tool or of another written-out constant, through any import of it.
    const symbol = ts.isShorthandPropertyAssignment(e.parent)
      ? checker.getShorthandAssignmentValueSymbol(e.parent)
      : checker.getSymbolAtLocation(e);
    const original = symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    const declaration = original?.valueDeclaration;
    if (!declaration || !ts.isVariableDeclaration(declaration) || !declaration.initializer) return false;
    const list = declaration.parent;
    if (!ts.isVariableDeclarationList(list) || !(list.flags & ts.NodeFlags.Const)) return false;
    return isWrittenOut(declaration.initializer, checker, depth + 1);
  }
  return false;
}

/** The module a relative specifier names, if it is one of ours; undefined for a package. */
function resolveSpecifier(from: string, specifier: string | undefined): string | undefined {
  if (specifier === undefined || !specifier.startsWith('.')) return undefined;
  const base = resolve(from, specifier);
  const candidates = [
    base,
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.mjs$/, '.mts'),
    `${base}.ts`,
    join(base, 'index.ts'),
  ];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

/** The exports of `module` that are declared in the money writes, under the names it exports them by. */
function moneyExportsOf(program: ts.Program, checker: ts.TypeChecker, module: string, root: string): string[] {
  const source = program.getSourceFile(module);
  if (!source) return [];
  const symbol = checker.getSymbolAtLocation(source);
  if (!symbol) return [];
  const found: string[] = [];
  for (const exported of checker.getExportsOfModule(symbol)) {
    let original = exported;
    // Follows every alias (`export { x as y } from`, `export *`, an import re-exported) to the declaration.
    while (original.flags & ts.SymbolFlags.Alias) {
      const next = checker.getAliasedSymbol(original);
      if (next === original) break;
      original = next;
    }
    const declaredIn = original.declarations?.[0]?.getSourceFile().fileName;
    if (declaredIn && relative(root, declaredIn).split(sep).join('/').startsWith(MONEY_WRITES)) {
      found.push(exported.name);
    }
  }
  return found;
}

/** What `node` writes to a money table, if it is a write: kysely's builders, or SQL in a `sql` template or `sql.raw`. */
function moneyWrites(node: ts.Node, checker: ts.TypeChecker): string[] {
  const found: string[] = [];
  if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
    const method = node.expression.name.text;
    const [first] = node.arguments;
    if (KYSELY_WRITES.has(method) && first) {
      const tables = tableNames(first, checker);
      if (tables === undefined) found.push(`${method} of a table it names at run time`);
      else {
        const written =
          method === 'updateTable'
            ? setAssignments(node, checker)
            : method === 'insertInto'
              ? valuesAssignments(node, checker)
              : undefined;
        const columns = method === 'updateTable' ? written?.map((a) => a.column) : undefined;
        for (const table of tables.filter(isMoneyTable)) {
          const bookkeeping = BOOKKEEPING_COLUMNS[table];
          if (columns && bookkeeping && columns.every((c) => bookkeeping.includes(c))) continue;
          // What it writes, column by column with the literal values it sets (a status), so that a
          // write kept on a list of known ones cannot start setting another column or status.
          const what =
            method === 'updateTable'
              ? ` sets ${described(written)}`
              : method === 'insertInto'
                ? ` with ${described(written)}`
                : '';
          found.push(`${method}('${table}')${what}`);
        }
      }
    }
    const receiver = node.expression.expression;
    const compiled = ts.isIdentifier(receiver) && receiver.text === 'CompiledQuery';
    if (method === 'raw' && first && (compiled || isSqlTag(receiver, checker))) {
      found.push(...sqlTextWrites(sqlText(first, checker), 'sql.raw'));
    }
  }
  if (ts.isTaggedTemplateExpression(node) && isSqlTag(node.tag, checker)) {
    found.push(...sqlTextWrites(sqlText(node.template, checker), 'sql`…`'));
  }
  // Any other text that starts as a write statement to a money table: SQL built by hand, handed to
  // a driver's query() or concatenated into one (a log message does not start with a verb and table).
  const isTemplatePart =
    ts.isTemplateHead(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isStringLiteral(node);
  if (isTemplatePart && !insideSql(node, checker)) {
    const statement = STATEMENT_WRITE.exec(node.text);
    if (statement && isMoneyTable(statement[2]!.toLowerCase())) {
      found.push(`SQL text: ${statement[1]!.toLowerCase().replace(/\s+/g, ' ')} ${statement[2]!.toLowerCase()}`);
    }
  }
  return found;
}

/** Text a `sql` template or sql.raw/CompiledQuery.raw call already reads (not counted twice). */
function insideSql(node: ts.Node, checker: ts.TypeChecker): boolean {
  for (let up = node.parent; up; up = up.parent) {
    if (ts.isTaggedTemplateExpression(up) && isSqlTag(up.tag, checker)) return true;
    if (ts.isCallExpression(up) && ts.isPropertyAccessExpression(up.expression) && up.expression.name.text === 'raw') {
      return true;
    }
    if (ts.isBlock(up) || ts.isSourceFile(up)) return false;
  }
  return false;
}

function isMoneyTable(name: string): boolean {
  return (MONEY_TABLES as readonly string[]).includes(name);
}

/** 'public.payments as p' → payments. */
function bareTable(name: string): string {
  return (
    name
      .split(/\s+as\s+/i)[0]!
      .trim()
      .split('.')
      .pop()
      ?.replaceAll('"', '') ?? name
  );
}

/** The tables an expression can name: its literal, or the literal types the checker gives it; undefined when any string can be. */
function tableNames(expr: ts.Expression, checker: ts.TypeChecker): string[] | undefined {
  if (ts.isStringLiteralLike(expr)) return [bareTable(expr.text)];
  if (ts.isParenthesizedExpression(expr) || ts.isAsExpression(expr) || ts.isSatisfiesExpression(expr)) {
    const inner = tableNames(expr.expression, checker);
    if (inner !== undefined && !ts.isAsExpression(expr)) return inner;
    if (inner !== undefined) return [...inner, ...(literalsOf(checker.getTypeAtLocation(expr)) ?? [])];
  }
  if (ts.isCallExpression(expr) && ts.isPropertyAccessExpression(expr.expression)) {
    // sql.table('payments'), sql.id('payments'), db.dynamic.table('payments').as('p')
    const name = expr.expression.name.text;
    if (['table', 'id', 'raw', 'as'].includes(name)) {
      const target = name === 'as' ? expr.expression.expression : expr.arguments[0];
      if (target) return tableNames(target, checker);
    }
  }
  if (ts.isIdentifier(expr)) {
    const symbol = checker.getSymbolAtLocation(expr);
    const declaration = symbol?.valueDeclaration;
    if (declaration && ts.isVariableDeclaration(declaration) && declaration.initializer) {
      const fromInit = tableNames(declaration.initializer, checker);
      if (fromInit !== undefined) return fromInit;
    }
  }
  const literals = literalsOf(checker.getTypeAtLocation(expr));
  return literals?.map(bareTable);
}

function literalsOf(type: ts.Type): string[] | undefined {
  const parts = type.isUnion() ? type.types : [type];
  const out: string[] = [];
  for (const part of parts) {
    if (part.isStringLiteral()) out.push(part.value);
    else return undefined;
  }
  return out;
}

/** A column a write sets, and the literal value(s) it sets it to when they can be read (a status). */
interface Assignment {
  column: string;
  value?: string;
}

/** A write's columns, sorted, each with its literal values: `status = 'sent', updated_at`. */
function described(assignments: Assignment[] | undefined): string {
  if (assignments === undefined) return 'what it cannot read';
  const byColumn = new Map<string, Set<string>>();
  for (const { column, value } of assignments) {
    const values = byColumn.get(column) ?? new Set<string>();
    if (value !== undefined) values.add(value);
    byColumn.set(column, values);
  }
  return [...byColumn.keys()]
    .sort()
    .map((column) => {
      const values = [...byColumn.get(column)!].sort();
      return values.length > 0 ? `${column} = ${values.join(' | ')}` : column;
    })
    .join(', ');
}

/**
 * What every `.set(…)` further along an update's chain writes, all of them (a second `.set` adds
 * its columns to the first's); undefined when any cannot be read (a spread, a variable, a
 * function's argument, a computed name) or when the chain has none here, so that the update counts
 * as a money write.
 */
function setAssignments(call: ts.CallExpression, checker: ts.TypeChecker): Assignment[] | undefined {
  let node: ts.Node = call;
  const found: Assignment[] = [];
  let sets = 0;
  while (ts.isPropertyAccessExpression(node.parent) && ts.isCallExpression(node.parent.parent)) {
    const next = node.parent.parent;
    if (node.parent.name.text === 'set') {
      sets++;
      const assignments = assignmentsOfSet(next, checker);
      if (assignments === undefined) return undefined;
      found.push(...assignments);
    }
    node = next;
  }
  return sets > 0 ? found : undefined;
}

/** What one `.set({ a, b: … })` or `.set('a', …)` writes; undefined when it cannot be read. */
function assignmentsOfSet(set: ts.CallExpression, checker: ts.TypeChecker): Assignment[] | undefined {
  const [values, value] = set.arguments;
  if (!values) return undefined;
  if (set.arguments.length === 2 && ts.isStringLiteralLike(values)) {
    return [{ column: values.text, value: value && literalValue(value, checker) }];
  }
  if (set.arguments.length !== 1) return undefined;
  return objectAssignments(values, checker);
}

/** What an insert's `.values(…)` writes: an object, an array of them, or `rows.map((r) => ({ … }))`. */
function valuesAssignments(call: ts.CallExpression, checker: ts.TypeChecker): Assignment[] | undefined {
  let node: ts.Node = call;
  while (ts.isPropertyAccessExpression(node.parent) && ts.isCallExpression(node.parent.parent)) {
    const next = node.parent.parent;
    if (node.parent.name.text === 'values') {
      const [rows] = next.arguments;
      if (!rows || next.arguments.length !== 1) return undefined;
      const e = bare(rows);
      if (ts.isArrayLiteralExpression(e)) {
        const all: Assignment[] = [];
        for (const row of e.elements) {
          const one = objectAssignments(row, checker);
          if (one === undefined) return undefined;
          all.push(...one);
        }
        return all;
      }
      if (
        ts.isCallExpression(e) &&
        ts.isPropertyAccessExpression(e.expression) &&
        e.expression.name.text === 'map' &&
        e.arguments.length === 1
      ) {
        const [fn] = e.arguments;
        if (fn && ts.isArrowFunction(fn) && !ts.isBlock(fn.body)) return objectAssignments(fn.body, checker);
        return undefined;
      }
      return objectAssignments(e, checker);
    }
    node = next;
  }
  return undefined;
}

/** The properties of an object literal as columns; undefined for anything else or a spread. */
function objectAssignments(expr: ts.Expression, checker: ts.TypeChecker): Assignment[] | undefined {
  const values = bare(expr);
  if (!ts.isObjectLiteralExpression(values)) return undefined;
  const found: Assignment[] = [];
  for (const property of values.properties) {
    if (ts.isPropertyAssignment(property) && (ts.isIdentifier(property.name) || ts.isStringLiteral(property.name))) {
      found.push({ column: property.name.text, value: literalValue(property.initializer, checker) });
    } else if (ts.isShorthandPropertyAssignment(property)) {
      found.push({ column: property.name.text, value: literalValue(property.name, checker) });
    } else return undefined;
  }
  return found;
}

/** The string literal(s) a value is, quoted (`'sent'`, `'a' | 'b'`); undefined when not literals. */
function literalValue(expr: ts.Expression, checker: ts.TypeChecker): string | undefined {
  const e = bare(expr);
  if (ts.isStringLiteralLike(e)) return `'${e.text}'`;
  if (e.kind === ts.SyntaxKind.NullKeyword) return undefined;
  const literals = literalsOf(checker.getTypeAtLocation(e));
  return literals && literals.length > 0
    ? [...literals]
        .sort()
        .map((l) => `'${l}'`)
        .join(' | ')
    : undefined;
}

/** `sql` from kysely, under any name it was imported or assigned by. */
function isSqlTag(expr: ts.Expression, checker: ts.TypeChecker): boolean {
  if (ts.isPropertyAccessExpression(expr)) {
    // k.sql, where k is `import * as k from 'kysely'`
    return expr.name.text === 'sql' && fromKysely(expr.expression, checker, true);
  }
  if (!ts.isIdentifier(expr)) return false;
  return fromKysely(expr, checker, false);
}

function fromKysely(expr: ts.Expression, checker: ts.TypeChecker, namespace: boolean): boolean {
  if (!ts.isIdentifier(expr)) return false;
  const symbol = checker.getSymbolAtLocation(expr);
  const declaration = symbol?.declarations?.[0];
  if (!declaration) return !namespace && expr.text === 'sql';
  if (ts.isVariableDeclaration(declaration) && declaration.initializer) {
    return isSqlTag(declaration.initializer, checker);
  }
  const module = (node: ts.Node): string | undefined => {
    while (node && !ts.isImportDeclaration(node)) node = node.parent;
    return node && ts.isStringLiteral(node.moduleSpecifier) ? node.moduleSpecifier.text : undefined;
  };
  if (namespace) return ts.isNamespaceImport(declaration) && module(declaration) === 'kysely';
  if (ts.isImportSpecifier(declaration)) {
    return (declaration.propertyName ?? declaration.name).text === 'sql' && module(declaration) === 'kysely';
  }
  return false;
}

/** The SQL text of a template or string, with a table it interpolates written in (or UNKNOWN); undefined if not known at all. */
function sqlText(expr: ts.Node, checker: ts.TypeChecker): string | undefined {
  if (ts.isNoSubstitutionTemplateLiteral(expr) || ts.isStringLiteral(expr)) return expr.text;
  if (ts.isTemplateExpression(expr)) {
    let text = expr.head.text;
    for (const span of expr.templateSpans) {
      text += interpolated(span.expression, checker) + span.literal.text;
    }
    return text;
  }
  if (ts.isIdentifier(expr)) {
    const declaration = checker.getSymbolAtLocation(expr)?.valueDeclaration;
    if (declaration && ts.isVariableDeclaration(declaration) && declaration.initializer) {
      return sqlText(declaration.initializer, checker);
    }
    const literals = literalsOf(checker.getTypeAtLocation(expr));
    if (literals?.length === 1) return literals[0];
  }
  return undefined;
}

/** What an interpolation puts in SQL text: a table (sql.table, sql.id, sql.raw), or a parameter. */
function interpolated(expr: ts.Expression, checker: ts.TypeChecker): string {
  const asName =
    ts.isCallExpression(expr) &&
    ts.isPropertyAccessExpression(expr.expression) &&
    ['table', 'id', 'raw', 'ref'].includes(expr.expression.name.text);
  if (!asName) return '$1';
  const tables = tableNames(expr, checker);
  if (tables === undefined) return UNKNOWN;
  return tables.find(isMoneyTable) ?? tables[0] ?? UNKNOWN;
}

function sqlTextWrites(text: string | undefined, how: string): string[] {
  if (text === undefined) return [];
  const found: string[] = [];
  for (const m of text.matchAll(SQL_WRITE)) {
    const verb = m[1]!.toLowerCase().replace(/\s+/g, ' ');
    const table = m[2]!;
    if (table === UNKNOWN) found.push(`${how}: ${verb} of a table it names at run time`);
    else if (isMoneyTable(table.toLowerCase())) {
      const rest = text.slice(m.index + m[0].length);
      found.push(`${how}: ${verb} ${table.toLowerCase()}${sqlColumns(verb, rest)}`);
    }
  }
  return found;
}

/** The columns SQL text writes after its table (` sets a, status = 'x'`, ` with a, b`), as the builders' are described. */
function sqlColumns(verb: string, rest: string): string {
  if (verb === 'update') {
    const set = /^\s+(?:(?:as\s+)?\w+\s+)?set\s+([\s\S]*?)(?:\s+where\s|\s+returning\s|\s+from\s|;|$)/i.exec(rest);
    if (!set) return ' sets what it cannot read';
    const assignments: Assignment[] = [];
    for (const a of set[1]!.matchAll(/(?:^|,)\s*"?(\w+)"?\s*=\s*('[^']*')?/g)) {
      assignments.push({ column: a[1]!.toLowerCase(), value: a[2] });
    }
    return ` sets ${described(assignments.length > 0 ? assignments : undefined)}`;
  }
  if (verb === 'insert into') {
    const columns = /^\s*\(([^)]*)\)/.exec(rest);
    if (!columns) return ' with what it cannot read';
    const names = columns[1]!.split(',').map((c) => ({ column: c.trim().replace(/"/g, '').toLowerCase() }));
    return ` with ${described(names)}`;
  }
  return '';
}

/** The circles of a graph: each strongly connected component of more than one module, in walking order. */
export function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** One line per finding, without line numbers: what a list of known findings is kept as. */
export function describe(finding: Finding): string {
  return `${finding.rule}: ${finding.file}: ${finding.what}`;
}
