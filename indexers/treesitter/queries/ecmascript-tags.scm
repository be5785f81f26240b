; Tags shared by JavaScript and TypeScript (see python-tags.scm for the capture convention);
; javascript-tags.scm and typescript-tags.scm pull them in with `; inherits: ecmascript-tags`.

; --- definitions ----------------------------------------------------------------------------

(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(method_definition
  name: [(property_identifier) (private_property_identifier)] @name) @definition.method

(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function
(variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function
(lexical_declaration
  (variable_declarator name: (identifier) @name value: (class))) @definition.class

; Model.prototype.save = function () {…}, exports.parse = (s) => …
(expression_statement
  (assignment_expression
    left: (member_expression) @name
    right: [(arrow_function) (function_expression !name) (generator_function !name)]))
  @definition.function
(expression_statement
  (assignment_expression
    left: (member_expression) @name
    right: [(function_expression name: (_)) (generator_function name: (_))])
  (#not-eq? @name "module.exports")) @definition.function
; module.exports = function build() {…}: the module's value is the function `build` (also
; `module.exports = exports = function build() {…}`)
(expression_statement
  (assignment_expression
    left: (member_expression) @_module
    right: [(function_expression name: (identifier) @name)
            (generator_function name: (identifier) @name)
            (assignment_expression
              right: [(function_expression name: (identifier) @name)
                      (generator_function name: (identifier) @name)])])
  (#eq? @_module "module.exports")) @definition.function

; { save() {…}, load: function () {…} }
(pair
  key: [(property_identifier) (string)] @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; module-level variables (not the ones a require() binds: those are imports)
(program
  (lexical_declaration
    (variable_declarator
      name: (identifier) @name
      value: (new_expression constructor: (_) @declared.type))) @definition.variable)
(program
  [(lexical_declaration (variable_declarator name: (identifier) @name value: (_)? @_value))
   (variable_declaration (variable_declarator name: (identifier) @name value: (_)? @_value))]
  @definition.variable
  (#not-match? @_value "^require[(]"))
(program
  (export_statement
    declaration: (lexical_declaration
      (variable_declarator name: (identifier) @name)) @definition.variable))
; a module-level variable made by a call is of what the call returns (`const c = build()`)
(program
  [(lexical_declaration (variable_declarator
     name: (identifier) @annotated
     value: (call_expression function: [(identifier) (member_expression)] @declared.type)))
   (variable_declaration (variable_declarator
     name: (identifier) @annotated
     value: (call_expression function: [(identifier) (member_expression)] @declared.type)))])

; this.x = … in a method declares a field of its class
(assignment_expression
  left: (member_expression object: (this) property: (property_identifier) @name)
  right: (new_expression constructor: (_) @declared.type)) @definition.field
(assignment_expression
  left: (member_expression object: (this) property: (property_identifier) @name)
  right: (identifier) @declared.from) @definition.field
(assignment_expression
  left: (member_expression object: (this) property: (property_identifier) @name)) @definition.field

(return_statement [(new_expression constructor: (_) @returned) (identifier) @returned])
; an arrow function's body is what it returns (`const make = () => new Store()`)
(variable_declarator
  name: (identifier) @annotated
  value: (arrow_function body: (new_expression constructor: (_) @declared.type)))

; --- references -------------------------------------------------------------------------------

(call_expression function: (identifier) @reference.call)
(call_expression
  function: (member_expression
    property: [(property_identifier) (private_property_identifier)] @member.call))
(call_expression
  function: (member_expression
    object: (new_expression constructor: (_) @receiver.type) @qualifier
    property: (property_identifier) @name)) @reference.call
; make().save(), Store.create().save(): the receiver is what the call returns
(call_expression
  function: (member_expression
    object: (call_expression function: [(identifier) (member_expression)] @receiver.type)
      @qualifier
    property: (property_identifier) @name)) @reference.call
(new_expression constructor: (identifier) @reference.call)
(new_expression constructor: (member_expression property: (property_identifier) @member.call))

(shorthand_property_identifier) @reference.other
(member_expression
  property: [(property_identifier) (private_property_identifier)] @member.other)

(import_specifier [(identifier) (string)] @ignore)
(expression_statement
  (assignment_expression
    left: (member_expression property: (property_identifier) @ignore)
    right: [(arrow_function) (function_expression) (generator_function)]))
(namespace_import (identifier) @ignore)
(import_clause (identifier) @ignore)
(export_specifier [(identifier) (string)] @ignore)
(assignment_expression
  left: (member_expression object: (this) property: (property_identifier) @ignore))

; --- imports ------------------------------------------------------------------------------------

(import_statement
  (import_clause
    (named_imports
      (import_specifier name: (_) @import.name alias: (_)? @import.alias)))
  source: (string) @import.module) @import
(import_statement
  (import_clause (namespace_import (identifier) @import.alias))
  source: (string) @import.module) @import
; a default import binds the module's `default` (`import Store from "./shop"`)
(import_statement
  (import_clause (identifier) @import.alias @import.default)
  source: (string) @import.module) @import
(export_statement
  (export_clause (export_specifier name: (_) @import.name alias: (_)? @import.alias))
  source: (string) @import.module) @import
(export_statement
  "*" @import.star
  source: (string) @import.module) @import

; what a module exports of its own: `export default X;` is its `default`, `export { X as Y }`
; its Y; `module.exports = …` its value (`X`, `exports = X`) or names (`{ X, Y: X }`);
; `exports.Y = …` and `module.exports.Y = …` a name (X: that binding, a value: a variable)
(export_statement value: (identifier) @export.name) @export.default
(export_statement
  !source
  (export_clause (export_specifier name: (identifier) @export.name alias: _? @export.as)))
  @export.named
(expression_statement
  (assignment_expression
    left: (member_expression object: (identifier) @_module property: (property_identifier) @_exports)
    right: (_) @export.value)
  (#eq? @_module "module")
  (#eq? @_exports "exports")) @export.statement
(expression_statement
  (assignment_expression
    left: (member_expression
      object: [(identifier) (member_expression)] @_exports
      property: (property_identifier) @export.as) @export.left
    right: (_) @export.member)
  (#match? @_exports "^(module[.])?exports$")) @export.statement

; const x = require("./x"), const { a, b: c } = require("./x")
(variable_declarator
  name: (identifier) @import.alias
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments . (string) @import.module))
  (#eq? @_require "require")) @import
(variable_declarator
  name: (object_pattern
    [(shorthand_property_identifier_pattern) @import.name
     (pair_pattern key: (_) @import.name value: (identifier) @import.alias)])
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments . (string) @import.module))
  (#eq? @_require "require")) @import

; --- locals ---------------------------------------------------------------------------------------

(variable_declarator name: (identifier) @local.definition)
(variable_declarator
  name: (identifier) @local.definition
  value: (new_expression constructor: (_) @local.type))
(variable_declarator
  name: (identifier) @local.definition
  value: (call_expression function: (_) @local.type))
; the names a destructuring binds, wherever it is (a declaration, a parameter, a loop's
; variable): `{ a }`, `{ a = 1 }`, `{ a: b }`, `{ a: b = 1 }`, `[x, y = 1]`, `...rest`,
; nested ones
(object_pattern (shorthand_property_identifier_pattern) @local.definition)
(object_pattern
  (object_assignment_pattern left: (shorthand_property_identifier_pattern) @local.definition))
(pair_pattern value: (identifier) @local.definition)
(pair_pattern value: (assignment_pattern left: (identifier) @local.definition))
(array_pattern (identifier) @local.definition)
(array_pattern (assignment_pattern left: (identifier) @local.definition))
(rest_pattern (identifier) @local.definition)
(for_in_statement left: (identifier) @local.definition)
(for_in_statement left: (identifier) @local.definition operator: "of" right: (_) @local.iterable)
(catch_clause parameter: (identifier) @local.definition)
[(arrow_function) (function_expression) (generator_function)] @local.scope
