/* TensorRT stand-in made by repromatrix: the entry points libtorchtrt.so links
   against. Builders and runtimes are null; the plugin registry answers 0. */
#include <stddef.h>
static void *answer_zero(void) { return NULL; }
static void *registry_methods[128];
static struct { void **methods; } registry = { registry_methods };
__attribute__((constructor)) static void fill(void) {
    for (size_t i = 0; i < sizeof registry_methods / sizeof *registry_methods; i++)
        registry_methods[i] = (void *)answer_zero;
}
void *createInferBuilder_INTERNAL(void *logger, int version) { return NULL; }
void *createInferRuntime_INTERNAL(void *logger, int version) { return NULL; }
void *getPluginRegistry(void) { return &registry; }
int initLibNvInferPlugins(void *logger, const char *ns) { return 1; }
