/* A shared object without minfer_plugin_entry (a typo'd or stripped
 * plugin). */
#include "minfer/plugin.h"

MINFER_PLUGIN_EXPORT int minfer_plugin_entry_typo(void);
MINFER_PLUGIN_EXPORT int minfer_plugin_entry_typo(void) { return 1; }
