; Definitions for the chunker (see python.scm for the capture convention).
; `const Point = struct { … }` is a class; the functions in it are its methods.

(Decl (FnProto function: (IDENTIFIER) @name)) @definition.function

(VarDecl
  variable_type_function: (IDENTIFIER) @name
  (ErrorUnionExpr (SuffixExpr (ContainerDecl)))) @definition.class

(TestDecl (STRINGLITERALSINGLE) @name) @definition.function
