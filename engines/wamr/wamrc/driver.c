/*
 * wasmlab-wamrc's compiler: one Wasm module to one AOT file with WAMR's AOT compiler, with the
 * options wamrc uses when it is given none (`wamrc -o OUT.aot IN.wasm`): LLVM -O3 (opt level 3),
 * size level 3, the host's target and CPU, bounds checks as the platform wants them (none on
 * x86-64, where the runtime relies on guard pages), the auxiliary stack check, and the bulk
 * memory, reference types and SIMD proposals (each left out by the compiler when the module does
 * not use it).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_export.h"
#include "wasm_export.h"

void wasmlab_wamrc_version(uint32_t* major, uint32_t* minor, uint32_t* patch) {
  wasm_runtime_get_version(major, minor, patch);
}

static void set_error(char* error, uint32_t size, const char* what, const char* detail) {
  snprintf(error, size, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

/* Compiles the module in wasm[0..size) to the AOT file out_path. Returns 1 on success; else 0
 * with a message in error. */
int wasmlab_wamrc_compile(uint8_t* wasm, uint32_t size, const char* out_path, char* error,
                          uint32_t error_size) {
  RuntimeInitArgs init;
  AOTCompOption option;
  char load_error[128];
  wasm_module_t module = NULL;
  aot_comp_data_t data = NULL;
  aot_comp_context_t ctx = NULL;
  int ok = 0;

  memset(&init, 0, sizeof init);
  init.mem_alloc_type = Alloc_With_Allocator;
  init.mem_alloc_option.allocator.malloc_func = malloc;
  init.mem_alloc_option.allocator.realloc_func = realloc;
  init.mem_alloc_option.allocator.free_func = free;
  if (!wasm_runtime_full_init(&init)) {
    set_error(error, error_size, "cannot initialise the WAMR runtime", NULL);
    return 0;
  }

  memset(&option, 0, sizeof option);
  option.opt_level = 3;
  option.size_level = 3;
  option.output_format = AOT_FORMAT_FILE;
  option.bounds_checks = 2;       /* 2: as the target platform wants */
  option.stack_bounds_checks = 2; /* likewise */
  option.enable_simd = true;
  option.enable_aux_stack_check = true;
  option.enable_bulk_memory = true;
  option.enable_bulk_memory_opt = true;
  option.enable_ref_types = true;
  option.enable_call_indirect_overlong = true;
  option.enable_gc = false;

  module = wasm_runtime_load(wasm, size, load_error, sizeof load_error);
  if (!module) {
    set_error(error, error_size, "cannot load the module", load_error);
    goto done;
  }
  data = aot_create_comp_data(module, NULL, false);
  if (!data) {
    set_error(error, error_size, "aot_create_comp_data", aot_get_last_error());
    goto done;
  }
  ctx = aot_create_comp_context(data, &option);
  if (!ctx) {
    set_error(error, error_size, "aot_create_comp_context", aot_get_last_error());
    goto done;
  }
  if (!aot_compile_wasm(ctx)) {
    set_error(error, error_size, "aot_compile_wasm", aot_get_last_error());
    goto done;
  }
  if (!aot_emit_aot_file(ctx, data, out_path)) {
    set_error(error, error_size, "aot_emit_aot_file", aot_get_last_error());
    goto done;
  }
  ok = 1;

done:
  if (ctx) aot_destroy_comp_context(ctx);
  if (data) aot_destroy_comp_data(data);
  if (module) wasm_runtime_unload(module);
  wasm_runtime_destroy();
  return ok;
}
