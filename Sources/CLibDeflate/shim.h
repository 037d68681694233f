#ifndef TIDEMARK_CLIBDEFLATE_SHIM_H
#define TIDEMARK_CLIBDEFLATE_SHIM_H

#include <libdeflate.h>

#endif
