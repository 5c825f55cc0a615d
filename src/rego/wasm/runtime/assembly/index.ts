// Runtime entry: re-exports the ABI surface and every helper the linker (../../link.ts) calls by export
// name. The linker removes all non-ABI exports from the final policy module.
export * from "./alloc";
export * from "./value";
export * from "./number";
export * from "./compare";
export * from "./json";
export * from "./dump";
export * from "./ops";
export * from "./builtins";
export * from "./strings";
export * from "./jsonpatch";
