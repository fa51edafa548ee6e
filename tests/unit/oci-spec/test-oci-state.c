#include "tap.h"
TAP_MAIN()
