/*
 * Error codes and their messages.
 *
 * An implementation reports an error as cdn_err(class, "MPI_Foo: what was
 * wrong"), which files the message and returns an error code that carries
 * its class in the low 7 bits, as MPICH's codes do.  MPI_Error_string on
 * that code gives the class text and the message; MPI_Error_class gives the
 * class back.  User classes and codes (MPI_Add_error_class/code) live above
 * MPI_ERR_LASTCODE.
 */
#ifndef CDN_ERROR_H
#define CDN_ERROR_H

#include <mpi.h>

/* File a message and return an error code of this class. */
int cdn_err(int errclass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same error as code, its message led by prefix ("MPI_Type_extent:
 * MPI_Type_get_extent: ..."): for a function that delegates to another. */
int cdn_err_prefix(int code, const char *prefix);
/* The code for a declared function that Cadence does not implement yet. */
int cdn_err_unimplemented(const char *fname);

/* The class of a valid code; -1 for an invalid one. */
int cdn_err_class_of(int code);
/* Text for a code into buf (MPI_MAX_ERROR_STRING bytes); -1 if invalid. */
int cdn_err_string(int code, char *buf);
/* "MPI_ERR_TRUNCATE" for a predefined class, else NULL. */
const char *cdn_err_class_name(int errclass);

/* MPI_Add_error_class/code/string and MPI_Remove_error_* (MPI-4.1 9.5). */
int cdn_err_add_class(int *errorclass);
int cdn_err_add_code(int errorclass, int *errorcode);
int cdn_err_add_string(int errorcode, const char *string);
int cdn_err_remove_class(int errorclass);
int cdn_err_remove_code(int errorcode);
int cdn_err_remove_string(int errorcode);
int cdn_err_last_used_code(void);
void cdn_err_finalize(void);

#endif
