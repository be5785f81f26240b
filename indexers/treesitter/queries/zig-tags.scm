; Tags for Zig (see python-tags.scm for the capture convention). `const Point = struct {…}`
; is a struct whose functions are its methods; `const x = @import("x.zig")` imports a file.

(Decl
  (FnProto
    function: (IDENTIFIER) @name
    (ParamDeclList) . (ErrorUnionExpr)? @declared.type)) @definition.function
(VarDecl
  variable_type_function: (IDENTIFIER) @name
  (ErrorUnionExpr (SuffixExpr (ContainerDecl (ContainerDeclType "struct"))))) @definition.struct
(VarDecl
  variable_type_function: (IDENTIFIER) @name
  (ErrorUnionExpr (SuffixExpr (ContainerDecl (ContainerDeclType "enum"))))) @definition.enum
(VarDecl
  variable_type_function: (IDENTIFIER) @name
  (ErrorUnionExpr (SuffixExpr (ContainerDecl)))) @definition.struct
(source_file
  (Decl
    (VarDecl variable_type_function: (IDENTIFIER) @name (_) @_value) @definition.constant
    (#not-match? @_value "^@import")))
(ContainerField field_member: (IDENTIFIER) @name (ErrorUnionExpr) @declared.type) @definition.field
(TestDecl (STRINGLITERALSINGLE) @name) @definition.function

; --- references -------------------------------------------------------------------------------

(SuffixExpr variable_type_function: (IDENTIFIER) @name . (FnCallArguments)) @reference.call
; a.b.c(): the qualifier is the expression's text before the name (@qualifier.before)
(SuffixExpr (FieldOrFnCall function_call: (IDENTIFIER) @name)) @reference.call @qualifier.before
(SuffixExpr (FieldOrFnCall field_access: (IDENTIFIER) @name)) @reference.other @qualifier.before
(IDENTIFIER) @reference.other

(FieldInit field_member: (IDENTIFIER) @ignore)

; --- imports ------------------------------------------------------------------------------------

(VarDecl
  variable_type_function: (IDENTIFIER) @import.alias
  (ErrorUnionExpr
    (SuffixExpr
      (BUILTINIDENTIFIER) @_import
      (FnCallArguments (ErrorUnionExpr (SuffixExpr (STRINGLITERALSINGLE) @import.module)))))
  (#eq? @_import "@import")) @import

; --- locals ---------------------------------------------------------------------------------------

(ParamDecl parameter: (IDENTIFIER) @local.definition (ParamType) @local.type)
(Block (Statement (VarDecl variable_type_function: (IDENTIFIER) @local.definition)))
(Block
  (Statement
    (VarDecl
      variable_type_function: (IDENTIFIER) @local.definition
      (ErrorUnionExpr (SuffixExpr) @local.type))))
(PtrIndexPayload (IDENTIFIER) @local.definition)
(PtrPayload (IDENTIFIER) @local.definition)
(PtrListPayload (IDENTIFIER) @local.definition)  ; for (a, b) |x, y|
(Payload (IDENTIFIER) @local.definition)  ; else |err|, catch |err|, a switch prong's |x|
