/**
 * `pnpm docs:errors`: docs/errors.md from the error catalogue. Every `new ApiError({code, id,
 * statusCode, message})` of the packages' and services' sources is one row: the catalogue of
 * packages/domain/src/errors.ts and the few errors defined beside the code that throws them
 * (time parameters, links, backpressure, OAuth). Read from the source with the TypeScript parser,
 * not by calling the factories, so that a code defined anywhere is listed without a list to keep.
 * A factory whose code or status comes from its parameters (`oauthError(400, 'invalid_grant', …)`)
 * is listed once for each call of it in its file with literal arguments. Sorted by code, then
 * status and message, so the page changes only when the catalogue does;
 * test/scripts/errors-doc.unit.test.ts fails when docs/errors.md is not what this renders.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'

export const root = path.resolve(import.meta.dirname, '..')
export const ERRORS_DOC = path.join(root, 'docs', 'errors.md')

export interface ErrorEntry {
  code: string
  /** the HTTP status, or `4xx` when it is the status of the error it wraps */
  status: string
  /** the body's `id`; empty when it follows the status (idForStatus) */
  id: string
  /** the message, with what a caller fills in as ‹name› */
  message: string
  /** the factory's JSDoc, when it has one */
  note: string
  /** for a message the caller gives: the messages the code gives it, at most three */
  examples: string[]
  /** the factory (`errors.notFound`, `oauthError`) and its file, relative to the repository */
  factory: string
  file: string
}

function sourceFiles (dir: string): string[] {
  let found: string[] = []
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'dist' || entry === 'test' || entry.startsWith('.')) continue
    const full = path.join(dir, entry)
    if (statSync(full).isDirectory()) found = found.concat(sourceFiles(full))
    else if (entry.endsWith('.ts') && !entry.endsWith('.d.ts') && !entry.endsWith('.test.ts')) found.push(full)
  }
  return found
}

/** Where ApiErrors are made: the packages' and services' own sources. */
export function catalogueFiles (): string[] {
  return ['packages', 'services'].flatMap((top) => readdirSync(path.join(root, top))
    .map((name) => path.join(root, top, name, 'src'))
    .filter((dir) => { try { return statSync(dir).isDirectory() } catch { return false } })
    .flatMap(sourceFiles)).sort()
}

type Bindings = ReadonlyMap<string, string | number>

/** A short name for what a caller fills in: `String(key)` is ‹key›, `names.join(' and ')` ‹names›. */
function placeholder (node: ts.Expression): string {
  if (ts.isIdentifier(node)) return node.text
  if (ts.isPropertyAccessExpression(node)) return node.name.text
  if (ts.isElementAccessExpression(node)) return node.getText()
  if (ts.isCallExpression(node)) {
    const [first] = node.arguments
    if (ts.isIdentifier(node.expression) && first !== undefined) return placeholder(first)
    if (ts.isPropertyAccessExpression(node.expression)) return placeholder(node.expression.expression)
  }
  if (ts.isBinaryExpression(node)) return placeholder(node.left)
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node)) return placeholder(node.expression)
  return node.getText()
}

/** The value of an expression when literals and the bindings decide it, else undefined. */
function valueOf (node: ts.Expression, bindings: Bindings): string | number | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text
  if (ts.isNumericLiteral(node)) return Number(node.text)
  if (ts.isIdentifier(node)) return bindings.get(node.text)
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node)) return valueOf(node.expression, bindings)
  if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.arguments.length === 0) {
    const target = valueOf(node.expression.expression, bindings)
    if (typeof target !== 'string') return undefined
    if (node.expression.name.text === 'toUpperCase') return target.toUpperCase()
    if (node.expression.name.text === 'toLowerCase') return target.toLowerCase()
    return undefined
  }
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken) {
    return valueOf(node.left, bindings) ?? valueOf(node.right, bindings)
  }
  if (ts.isTemplateExpression(node)) {
    let text = node.head.text
    for (const span of node.templateSpans) {
      const value = valueOf(span.expression, bindings)
      if (value === undefined) return undefined
      text += String(value) + span.literal.text
    }
    return text
  }
  return undefined
}

/** A message as a reader sees it: literals as they are, anything a caller fills in as ‹name›. */
function messageOf (node: ts.Expression, bindings: Bindings): string {
  const known = valueOf(node, bindings)
  if (known !== undefined) return String(known)
  if (ts.isConditionalExpression(node)) return `${messageOf(node.whenTrue, bindings)} / ${messageOf(node.whenFalse, bindings)}`
  if (ts.isTemplateExpression(node)) {
    let text = node.head.text
    for (const span of node.templateSpans) {
      const inner = span.expression
      // `REASONS[type] ?? 'overloaded'`: the fallback is one of the messages, not the message.
      const value = ts.isBinaryExpression(inner) && inner.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken && valueOf(inner.left, bindings) === undefined
        ? undefined
        : valueOf(inner, bindings)
      text += (value !== undefined
        ? String(value)
        : ts.isConditionalExpression(inner) ? `${messageOf(inner.whenTrue, bindings)}/${messageOf(inner.whenFalse, bindings)}` : `‹${placeholder(inner)}›`) + span.literal.text
    }
    return text
  }
  return `‹${placeholder(node)}›`
}

type FunctionLike = ts.ArrowFunction | ts.FunctionExpression | ts.FunctionDeclaration | ts.MethodDeclaration

/** The function an ApiError is made in, and the name it is called by (`errors.notFound`, `badLink`). */
function factoryOf (node: ts.Node): { fn: FunctionLike, name: string } | undefined {
  for (let at: ts.Node | undefined = node.parent; at !== undefined; at = at.parent) {
    if (!(ts.isArrowFunction(at) || ts.isFunctionExpression(at) || ts.isFunctionDeclaration(at) || ts.isMethodDeclaration(at))) continue
    const holder = at.parent
    let name = at.name !== undefined && ts.isIdentifier(at.name) ? at.name.text : ''
    if (ts.isVariableDeclaration(holder) && ts.isIdentifier(holder.name)) name = holder.name.text
    if (ts.isPropertyAssignment(holder) && ts.isIdentifier(holder.name)) {
      const object = holder.parent.parent
      name = ts.isVariableDeclaration(object) && ts.isIdentifier(object.name) ? `${object.name.text}.${holder.name.text}` : holder.name.text
    }
    return { fn: at, name }
  }
  return undefined
}

/** The JSDoc of the factory's declaration (its property or variable), one line. */
function noteOf (fn: FunctionLike): string {
  const holder = ts.isArrowFunction(fn) || ts.isFunctionExpression(fn) ? fn.parent : fn
  const target = ts.isVariableDeclaration(holder) ? holder.parent.parent : holder
  const docs = ts.getJSDocCommentsAndTags(target).filter(ts.isJSDoc)
  const comment = docs.map((doc) => typeof doc.comment === 'string' ? doc.comment : ts.getTextOfJSDocComment(doc.comment) ?? '').join(' ')
  return comment.replace(/\s+/g, ' ').trim()
}

/** Each set of literal arguments the factory is called with in its own file. */
function callBindings (source: ts.SourceFile, fn: FunctionLike, name: string): Bindings[] {
  const params = fn.parameters.map((p) => ts.isIdentifier(p.name) ? p.name.text : '')
  const found: Bindings[] = []
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === name) {
      const bindings = new Map<string, string | number>()
      node.arguments.forEach((arg, i) => {
        const value = valueOf(arg, new Map())
        const param = params[i]
        if (value !== undefined && param !== undefined && param !== '') bindings.set(param, value)
      })
      found.push(bindings)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** The parameter a message is wholly taken from (`badRequest: (message) => …`), as its index and default. */
function messageParameter (fn: FunctionLike, message: ts.Expression): { index: number, fallback: string | undefined } | undefined {
  if (!ts.isIdentifier(message)) return undefined
  const index = fn.parameters.findIndex((p) => ts.isIdentifier(p.name) && p.name.text === message.text)
  const param = fn.parameters[index]
  if (param === undefined) return undefined
  const fallback = param.initializer === undefined ? undefined : valueOf(param.initializer, new Map())
  return { index, fallback: fallback === undefined ? undefined : String(fallback) }
}

/** What the callers of `name` (`errors.badRequest`, or a factory of one file) pass as its message. */
function messagesPassed (sources: readonly ts.SourceFile[], name: string, index: number): string[] {
  const found = new Set<string>()
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.expression.getText() === name) {
      const arg = node.arguments[index]
      if (arg !== undefined && (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg) || ts.isTemplateExpression(arg))) found.add(messageOf(arg, new Map()))
    }
    ts.forEachChild(node, visit)
  }
  for (const source of sources) visit(source)
  return [...found].sort()
}

function property (literal: ts.ObjectLiteralExpression, key: string): ts.Expression | undefined {
  for (const p of literal.properties) {
    if (ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && p.name.text === key) return p.initializer
    if (ts.isShorthandPropertyAssignment(p) && p.name.text === key) return p.name
  }
  return undefined
}

/** Every error of one file; `sources`, the files whose calls give a caller's messages. */
function errorsOf (source: ts.SourceFile, sources: readonly ts.SourceFile[]): ErrorEntry[] {
  const file = source.fileName
  const entries: ErrorEntry[] = []
  const relative = path.relative(root, file).split(path.sep).join('/')
  const visit = (node: ts.Node): void => {
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'ApiError') {
      const [init] = node.arguments ?? []
      if (init !== undefined && ts.isObjectLiteralExpression(init)) {
        const code = property(init, 'code')
        const status = property(init, 'statusCode')
        const id = property(init, 'id')
        const message = property(init, 'message')
        const factory = factoryOf(node)
        const needsCall = code !== undefined && valueOf(code, new Map()) === undefined && factory !== undefined
        const bindingSets: Bindings[] = needsCall ? callBindings(source, factory.fn, factory.name) : [new Map()]
        for (const bindings of bindingSets.length > 0 ? bindingSets : [new Map()]) {
          const codeValue = code === undefined ? undefined : valueOf(code, bindings)
          if (codeValue === undefined) continue
          const statusValue = status === undefined ? undefined : valueOf(status, bindings)
          const idValue = id === undefined ? undefined : valueOf(id, bindings)
          const passed = factory === undefined || message === undefined ? undefined : messageParameter(factory.fn, message)
          // errors.x is called by that name anywhere; a factory of one file only there.
          const examples = passed === undefined || factory === undefined
            ? []
            : messagesPassed(factory.name.includes('.') ? sources : [source], factory.name, passed.index)
          entries.push({
            code: String(codeValue),
            status: statusValue === undefined ? '4xx' : String(statusValue),
            id: idValue === undefined ? '' : String(idValue),
            message: message === undefined ? '' : passed?.fallback !== undefined ? `${passed.fallback} (unless the caller says more)` : messageOf(message, bindings),
            examples: examples.slice(0, 3),
            note: factory === undefined ? '' : noteOf(factory.fn),
            factory: factory?.name ?? '',
            file: relative
          })
        }
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return entries
}

/** Every error of the catalogue, sorted and without repeats. */
export function collectErrors (files = catalogueFiles()): ErrorEntry[] {
  const sources = files.flatMap((file) => {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      // Listed, then moved away before it was read (a change in progress): it has nothing to list.
      if ((err as { code?: unknown }).code === 'ENOENT') return []
      throw err
    }
    return [ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)]
  })
  const seen = new Set<string>()
  const all: ErrorEntry[] = []
  for (const entry of sources.flatMap((source) => errorsOf(source, sources))) {
    const key = JSON.stringify(entry)
    if (seen.has(key)) continue
    seen.add(key)
    all.push(entry)
  }
  const order = (e: ErrorEntry): string[] => [e.code, e.status.padStart(3, '0'), e.message, e.file, e.factory]
  return all.sort((a, b) => {
    const [x, y] = [order(a), order(b)]
    for (let i = 0; i < x.length; i++) {
      const c = (x[i] ?? '') < (y[i] ?? '') ? -1 : (x[i] ?? '') > (y[i] ?? '') ? 1 : 0
      if (c !== 0) return c
    }
    return 0
  })
}

/** Text safe in a table cell. */
const cell = (text: string): string => text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim()

/** docs/errors.md, as `pnpm docs:errors` writes it. */
export function renderErrorsDoc (entries = collectErrors()): string {
  const lines = [
    '# Errors',
    '',
    '<!-- Generated by `pnpm docs:errors` (scripts/errors-doc.ts) from the error catalogue; do not edit. -->',
    '',
    'Every error answer has the one body `{"id", "message", "errors", "url"}` (`errors`: the failing',
    'fields, or null). Clients read `id` and the status; the code (`ESP_…`) is what the logs name. The',
    'catalogue is [packages/domain/src/errors.ts](../packages/domain/src/errors.ts); a few errors are',
    'defined beside the code that throws them. In a message, ‹name› is filled in by the request.',
    '`ESP_CLIENT_ERROR` is a 4xx error of the framework that the platform passes on with its status and',
    'message (its own code, when it has one, is what the logs name).',
    '',
    '| code | status | `id` | meaning | defined by |',
    '|---|---|---|---|---|'
  ]
  for (const e of entries) {
    const message = e.examples.length > 0 && /^‹[^›]*›$/.test(e.message) ? `the caller's, e.g. ${e.examples.map((x) => `“${x}”`).join('; ')}` : e.message
    const meaning = e.note === '' ? message : `${e.note.replace(/\.?$/, '.')} ${message}`
    const where = `[\`${e.factory === '' ? path.basename(e.file) : e.factory}\`](../${e.file})`
    lines.push(`| \`${cell(e.code)}\` | ${cell(e.status)} | ${e.id === '' ? 'by status' : `\`${cell(e.id)}\``} | ${cell(meaning)} | ${where} |`)
  }
  return `${lines.join('\n')}\n`
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === import.meta.filename) {
  writeFileSync(ERRORS_DOC, renderErrorsDoc())
  console.log(`wrote ${path.relative(root, ERRORS_DOC)}`)
}
