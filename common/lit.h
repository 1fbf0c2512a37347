/* lit.h — a string literal (or a char array) as two arguments: (pointer,
 * length in bytes without the NUL). Never for a pointer: its sizeof is not
 * a length. */
#ifndef SY_COMMON_LIT_H
#define SY_COMMON_LIT_H

#define SY_LIT(s) (s), (sizeof(s) - 1)

#endif
