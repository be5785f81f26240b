; Tags for Ruby (see python-tags.scm for the capture convention). Constants (modules and
; classes) are global; `include`/`extend` mix a module in like a base class; instance
; variables set in methods are fields ("Store.@items").

(module name: [(constant) (scope_resolution)] @name) @definition.module
(class name: [(constant) (scope_resolution)] @name) @definition.class
(method name: (_) @name) @definition.function
(singleton_method name: (_) @name) @definition.method
(assignment left: (instance_variable) @name) @definition.field
(assignment left: (constant) @name) @definition.constant
(program
  (assignment
    left: (identifier) @name
    right: (call receiver: (_) @declared.type method: (identifier) @_new)
    (#eq? @_new "new")) @definition.variable)
(program (assignment left: (identifier) @name) @definition.variable)
(call
  method: (identifier) @_accessor
  arguments: (argument_list (simple_symbol) @name)
  (#match? @_accessor "^attr_(reader|writer|accessor)$")) @definition.field

; --- references -------------------------------------------------------------------------------

(superclass [(constant) @name (scope_resolution scope: (_) @qualifier name: (constant) @name)]
  @reference.inherit)
(call
  method: (identifier) @_mixin
  arguments: (argument_list [(constant) @name
                             (scope_resolution scope: (_) @qualifier name: (constant) @name)])
  (#match? @_mixin "^(include|extend|prepend)$")) @reference.inherit

(call !receiver method: (identifier) @name) @reference.call
(call receiver: (_) @qualifier method: (identifier) @name) @reference.call
(scope_resolution scope: (_) @qualifier name: (constant) @name) @reference.type
(constant) @reference.type
(identifier) @reference.other
(instance_variable) @reference.other

(call
  method: (identifier) @_require
  (#match? @_require "^(require|require_relative|load)$")) @ignore.inside
(pair key: (hash_key_symbol) @ignore)

; --- imports ------------------------------------------------------------------------------------

(call
  method: (identifier) @_require
  arguments: (argument_list . (string (string_content) @import.module))
  (#match? @_require "^(require|require_relative|load)$")) @import.star

; --- locals ---------------------------------------------------------------------------------------

(method_parameters (identifier) @local.definition)
(method_parameters (optional_parameter name: (identifier) @local.definition))
(method_parameters (keyword_parameter name: (identifier) @local.definition))
(method_parameters (splat_parameter name: (identifier) @local.definition))
(method_parameters (block_parameter name: (identifier) @local.definition))
(assignment left: (identifier) @local.definition)
(assignment
  left: (identifier) @local.definition
  right: (call receiver: (constant) @local.type method: (identifier) @_new (#eq? @_new "new")))
(block_parameters (identifier) @local.definition)
; `**opts`, a block's `*rest`, `key:` and `(k, v)`, a multiple assignment's names however
; nested (`a, (b, c) = …`, `x, *ys = …`), `rescue => e`
(hash_splat_parameter name: (identifier) @local.definition)
(block_parameters [(splat_parameter name: (identifier) @local.definition)
                   (optional_parameter name: (identifier) @local.definition)
                   (keyword_parameter name: (identifier) @local.definition)
                   (block_parameter name: (identifier) @local.definition)])
(destructured_parameter (identifier) @local.definition)
(left_assignment_list (identifier) @local.definition)
(destructured_left_assignment (identifier) @local.definition)
(rest_assignment (identifier) @local.definition)
(exception_variable (identifier) @local.definition)
[(block) (do_block) (lambda)] @local.scope
