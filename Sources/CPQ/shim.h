#ifndef CLARION_CPQ_SHIM_H
#define CLARION_CPQ_SHIM_H
#include <libpq-fe.h>
#endif
