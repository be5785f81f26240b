; Tags for the code graph. Capture convention (every language, see tags.py). A pattern with
; one capture is read capture by capture (fast: most identifiers are such patterns); the
; others match by match.
;   @definition.<kind>   a definition (function, method, class, interface, struct, enum, trait,
;                        module, constant, type, macro); a function inside a class-like
;                        definition becomes a method. @name names it (required), @receiver
;                        qualifies it (Go "Store.Add"), @doc is its docstring.
;   @declaration         (on a definition's node) it has no body: a prototype, an
;                        abstract or interface method.
;   @scope               a container that only qualifies what it holds (Rust impl, Swift
;                        extension), named by @name; not a definition itself.
;   @reference.<kind>    a use: call, inherit (or class / implementation), type, other;
;                        @name is the identifier (without @name: the captured node is),
;                        @qualifier the receiver/module expression,
;                        @receiver.type the receiver's type when the expression says it;
;                        @qualifier.before: the qualifier is this node's text before @name.
;   @import              an import statement; @import.module (as written), @import.name,
;                        @import.alias, @import.star (a wildcard); @import.default (on
;                        the alias): it binds the module's default export.
;   @export.default, @export.named, @export.statement
;                        (JavaScript) a statement exporting the module's own @export.name
;                        (`export default X`; `export { X as Y }`, Y its @export.as), or
;                        assigning `module.exports` its @export.value, or `exports.Y`
;                        (@export.left, Y its @export.as) its @export.member.
;   @member.<kind>       a reference whose qualifier is its parent's text before it
;                        (`self.client` for `send` in self.client.send): one capture.
;   @package             the package/namespace the file declares.
;   @ignore              a name that is never a reference (an attribute being assigned).
;   @declared.type       a definition's declared type (a function's return type, a field's
;                        annotation, the class a field is constructed from); @declared.from
;                        a local whose declared type a field takes. A pattern may instead
;                        name the definition by @annotated (its name) and give
;                        @declared.type (a guess used only without a declaration) or
;                        @decorator (what the definition's value is wrapped by).
;   @returned            what a return statement returns (a callee or a local): the last one
;                        is the type guess of a function without a declared return type.
;   @local.iterable      (with @local.definition) what a loop variable iterates over; with
;                        @local.implicit, what a closure given to a collection's method
;                        (`items.map { $0.price() }`) takes its elements from: the names
;                        `(#set! implicit "$0 $1")` lists are bound to them in the closure
;                        (and not in closures inside it). A `#set!` comes before a
;                        pattern's predicates: after one, tree-sitter's Python binding
;                        corrupts memory compiling the query.
;   @local.scope         a node with its own local scope (a lambda, a comprehension).
;   @local.constructor   a constructor parameter (Kotlin, Scala): local to the class's own
;                        header and initializers, not to its methods.
;   @local.definition    a name bound locally (parameter, assignment target) inside a
;                        function: bare references to it there are not references to a
;                        definition; @local.type is its declared or constructed type.
;   @local.entered       (with @local.definition) the callee of `with callee() as x`: x
;                        is what entering its value gives.
;   @local.global        a name a function declares global (`global x`): there it is the
;                        module's, whatever it binds; @local.nonlocal one it declares
;                        nonlocal: an enclosing function's. Either only in that function.

(class_definition
  name: (identifier) @name
  body: (block . (string) @doc)?) @definition.class

(function_definition
  name: (identifier) @name
  return_type: (type)? @declared.type
  body: (block . (string) @doc)?) @definition.function

; what a function returns, for functions without a return annotation: the last
; `return Something(...)` or `return local` in it
(return_statement [(call function: [(identifier) (attribute)] @returned) (identifier) @returned])

; @click.group() def cli(): … makes cli what the decorator returns (wrappers that keep the
; function as it is, like property and staticmethod, are left out)
(decorated_definition
  (decorator
    (_) @decorator
    (#not-match? @decorator "^(property|staticmethod|classmethod|abstractmethod|override|[a-z_.]*(cached_property|overload|abstractmethod|wraps|setter|getter|deleter|fixture|lru_cache|cache|contextmanager|mark[.].*))([(].*)?$"))
  definition: (function_definition name: (identifier) @annotated))

; module-level variables and CONSTANTS
(module
  (assignment
    left: (identifier) @name
    (#match? @name "^[A-Z][A-Z0-9_]+$")
    type: (type)? @declared.type) @definition.constant)
(module
  (assignment
    left: (identifier) @name
    (#not-match? @name "^[A-Z][A-Z0-9_]+$")
    !type  ; (an annotation says it: `_states: dict[Task, State] = WeakKeyDictionary()`)
    right: [(call function: [(identifier) (attribute)] @declared.type)
         (call function: (subscript value: [(identifier) (attribute)] @declared.type))  ; Ruler[T]()
         (boolean_operator right: (call function: [(identifier) (attribute)] @declared.type))  ; x or Default()
         (conditional_expression . (call function: [(identifier) (attribute)] @declared.type))
         (conditional_expression (call function: [(identifier) (attribute)] @declared.type) .)]) @definition.variable)
(module  ; an annotation that names no type: the constructor's
  (assignment
    left: (identifier) @name
    (#not-match? @name "^[A-Z][A-Z0-9_]+$")
    type: (type) @_loose
    (#match? @_loose "^((typing|t)[.])?(Any|Final)$|^object$")
    right: (call function: [(identifier) (attribute)] @declared.type)) @definition.variable)
(module
  (assignment
    left: (identifier) @name
    (#not-match? @name "^[A-Z][A-Z0-9_]+$")
    type: (type)? @declared.type) @definition.variable)

; fields: assignments in a class body, and `self.x = …` in its methods (the first one
; declares the field; @declared.type is its annotation or the class it is made from,
; @declared.from a parameter whose type it takes)
(class_definition
  body: (block
    (assignment left: (identifier) @name type: (type)? @declared.type) @definition.field))
(assignment
  left: (attribute object: (identifier) @_self attribute: (identifier) @name)
  (#eq? @_self "self")
  type: (type) @declared.type) @definition.field
(assignment
  left: (attribute object: (identifier) @_self attribute: (identifier) @name)
  (#eq? @_self "self")
  !type
  right: [(call function: [(identifier) (attribute)] @declared.type)
         (call function: (subscript value: [(identifier) (attribute)] @declared.type))  ; Ruler[T]()
         (boolean_operator right: (call function: [(identifier) (attribute)] @declared.type))  ; x or Default()
         (conditional_expression . (call function: [(identifier) (attribute)] @declared.type))
         (conditional_expression (call function: [(identifier) (attribute)] @declared.type) .)]) @definition.field
(assignment
  left: (attribute object: (identifier) @_self attribute: (identifier) @name)
  (#eq? @_self "self")
  right: (identifier) @declared.from) @definition.field
(assignment
  left: (attribute object: (identifier) @_self attribute: (identifier) @name)
  (#eq? @_self "self")) @definition.field
(assignment
  left: (pattern_list (attribute object: (identifier) @_self attribute: (identifier) @name))
  (#eq? @_self "self")) @definition.field

; --- references ---------------------------------------------------------------------------

(call function: (identifier) @reference.call)
(call function: (attribute attribute: (identifier) @member.call))

; Client(...).send(): the receiver is what the call makes (@receiver.type)
(call
  function: (attribute
    object: (call function: [(identifier) (attribute)] @receiver.type) @qualifier
    attribute: (identifier) @name)) @reference.call

(class_definition superclasses: (argument_list (identifier) @reference.inherit))
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @member.inherit)))
(class_definition superclasses: (argument_list (subscript value: (identifier) @reference.inherit)))
(class_definition
  superclasses: (argument_list
    (subscript value: (attribute attribute: (identifier) @member.inherit))))

(type (identifier) @reference.type)
(type (attribute attribute: (identifier) @member.type))

; any other name used as a value (a callback, a decorator, an argument, an operand): an
; identifier where the grammar wants an expression (`primary_expression/`), not every one.
; Half of a file's identifiers are not uses (attribute names, parameters, keyword names,
; the names being defined, assignment targets): matched, each was a node handed to Python
; and dropped there (click: 37,205 captured for 18,545 references; tagging click and
; Django's db package took 6 % fewer instructions without them, and the @ignore patterns
; these made needless). Parameters and locals used as values are dropped by
; scope. Keyword names, imported names and aliases, global declarations and the targets of
; loops and assignments are not expressions, so not captured; the attributes being assigned
; are @ignore'd below.
(primary_expression/identifier) @reference.other
(augmented_assignment left: (identifier) @reference.other)
(generic_type (identifier) @reference.other)
; `[*dict.fromkeys(x)]` parses as (attribute object: (list_splat (identifier))): no expression
(list_splat (identifier) @reference.other)
(attribute attribute: (identifier) @member.other)
(attribute
  object: (call function: [(identifier) (attribute)] @receiver.type) @qualifier
  attribute: (identifier) @name) @reference.other
(assignment left: (attribute attribute: (identifier) @ignore))
(assignment left: (pattern_list (attribute attribute: (identifier) @ignore)))
(augmented_assignment left: (attribute attribute: (identifier) @ignore))

; --- imports --------------------------------------------------------------------------------

(import_statement
  name: [(dotted_name) @import.module
         (aliased_import name: (dotted_name) @import.module alias: (identifier) @import.alias)]) @import

(import_from_statement
  module_name: (_) @import.module
  name: [(dotted_name) @import.name
         (aliased_import name: (dotted_name) @import.name alias: (identifier) @import.alias)]) @import

(import_from_statement
  module_name: (_) @import.module
  (wildcard_import) @import.star) @import

; --- locals ---------------------------------------------------------------------------------

(parameters (identifier) @local.definition)
(parameters (default_parameter name: (identifier) @local.definition))
(parameters (typed_parameter (identifier) @local.definition))
(parameters (typed_default_parameter name: (identifier) @local.definition))
(parameters (dictionary_splat_pattern (identifier) @local.definition))
(lambda_parameters (identifier) @local.definition)
(lambda_parameters (default_parameter name: (identifier) @local.definition))
(lambda_parameters (dictionary_splat_pattern (identifier) @local.definition))
[(lambda) (list_comprehension) (set_comprehension) (dictionary_comprehension)
 (generator_expression)] @local.scope
(assignment left: (identifier) @local.definition)
(assignment left: (pattern_list (identifier) @local.definition))
(augmented_assignment left: (identifier) @local.definition)
(for_statement left: (identifier) @local.definition)
(for_statement left: (pattern_list (identifier) @local.definition))
(for_in_clause left: (identifier) @local.definition)
(for_in_clause left: (pattern_list (identifier) @local.definition))
(as_pattern_target (identifier) @local.definition)
(except_clause (as_pattern alias: (as_pattern_target (identifier) @local.definition)))
(named_expression name: (identifier) @local.definition)
; the names an unpacking binds, however nested (`a, (b, c) = …`, `[d, *rest] = …`,
; `for i, (k, v) in …`, `with … as (x, y)`)
(tuple_pattern (identifier) @local.definition)
(list_pattern (identifier) @local.definition)
(list_splat_pattern (identifier) @local.definition)
(as_pattern_target (tuple (identifier) @local.definition))
; a match statement's captures: a bare name (a dotted one is a value to compare with),
; `*rest`, `**rest`, `… as name`, a keyword pattern's value (`Point(x=px)`)
(case_pattern . (dotted_name . (identifier) @local.definition .) .)
(keyword_pattern (dotted_name . (identifier) @local.definition .))
(splat_pattern (identifier) @local.definition)
(case_pattern (as_pattern (identifier) @local.definition))
(global_statement (identifier) @local.global)
(nonlocal_statement (identifier) @local.nonlocal)

; --- types of locals (receivers of known type) ----------------------------------------------

(typed_parameter (identifier) @local.definition type: (type) @local.type)
(typed_default_parameter name: (identifier) @local.definition type: (type) @local.type)
(assignment left: (identifier) @local.definition type: (type) @local.type)
(assignment
  left: (identifier) @local.definition
  right: [(call function: [(identifier) (attribute)] @local.type)
         (call function: (subscript value: [(identifier) (attribute)] @local.type))  ; Ruler[T]()
         (boolean_operator right: (call function: [(identifier) (attribute)] @local.type))  ; x or Default()
         (conditional_expression . (call function: [(identifier) (attribute)] @local.type))
         (conditional_expression (call function: [(identifier) (attribute)] @local.type) .)])
; `token = tokens[i]`: an element of what it indexes (a slice is no element); `info =
; self.info`: what the attribute holds; `d[key]`, `d[k].entry`: what indexing d gives (a
; mapping's value, a sequence's element), and its member. Not where an annotation says the
; type, nor where the value is read through a call (`self.registry(k).entry`)
(assignment
  left: (identifier) @local.definition
  !type
  right: (subscript
    value: [(identifier) (attribute)] @local.iterable
    subscript: [(identifier) (integer) (string) (unary_operator) (binary_operator) (attribute)])
  (#not-match? @local.iterable "[\\[(]"))
(assignment
  left: (identifier) @local.definition
  !type
  right: (attribute) @local.type
  (#match? @local.type "^\\w[\\w.]*(\\[[^\\[\\]():]+\\])?[.]\\w[\\w.]*$"))
(for_statement left: (identifier) @local.definition right: (_) @local.iterable)
(for_in_clause left: (identifier) @local.definition right: (_) @local.iterable)
(with_item
  value: (as_pattern
    (call function: [(identifier) (attribute)] @local.entered)
    alias: (as_pattern_target (identifier) @local.definition)))
(except_clause
  (as_pattern
    [(identifier) (attribute)] @local.type
    alias: (as_pattern_target (identifier) @local.definition)))
