#ifndef HERALD_CLIBUV_SHIM_H
#define HERALD_CLIBUV_SHIM_H
#include <uv.h>
#endif
