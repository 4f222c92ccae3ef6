/*
 * Error classes, error codes with messages, and user-defined classes/codes.
 *
 * Code layout (all below MPI_ERR_LASTCODE, 0x3fffffff):
 *   bits 0-6   the predefined class
 *   bits 7-29  0 for a bare class, else a message serial: the message sits in
 *              a ring of CDN_ERR_RING slots, found again by serial and
 *              checked against the full code, so a code whose message has
 *              been overwritten falls back to its class text.
 * User classes and codes (MPI_Add_error_class/code) are numbered upwards from
 * CDN_ERR_USER_BASE, above MPI_ERR_LASTCODE as MPI requires.
 */
#include "runtime/error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CDN_ERR_CLASS_BITS 7
#define CDN_ERR_CLASS_MASK 0x7f
#define CDN_ERR_SERIAL_MAX 0x7ffffe
#define CDN_ERR_RING 1024
#define CDN_ERR_USER_BASE 0x40000000
#define CDN_ERR_USER_MAX 4096

struct cdn_err_class_info {
    int errclass;
    const char *name;
    const char *text;
};

#define C(cls, text) {cls, #cls, text}
static const struct cdn_err_class_info classes[] = {
    C(MPI_SUCCESS, "no error"),
    C(MPI_ERR_BUFFER, "invalid buffer pointer"),
    C(MPI_ERR_COUNT, "invalid count argument"),
    C(MPI_ERR_TYPE, "invalid datatype"),
    C(MPI_ERR_TAG, "invalid tag"),
    C(MPI_ERR_COMM, "invalid communicator"),
    C(MPI_ERR_RANK, "invalid rank"),
    C(MPI_ERR_ROOT, "invalid root"),
    C(MPI_ERR_GROUP, "invalid group"),
    C(MPI_ERR_OP, "invalid reduction operation"),
    C(MPI_ERR_TOPOLOGY, "invalid topology"),
    C(MPI_ERR_DIMS, "invalid dimension argument"),
    C(MPI_ERR_ARG, "invalid argument"),
    C(MPI_ERR_UNKNOWN, "unknown error"),
    C(MPI_ERR_TRUNCATE, "message truncated"),
    C(MPI_ERR_OTHER, "other error"),
    C(MPI_ERR_INTERN, "internal error"),
    C(MPI_ERR_IN_STATUS, "error code is in status"),
    C(MPI_ERR_PENDING, "pending request"),
    C(MPI_ERR_REQUEST, "invalid request"),
    C(MPI_ERR_ACCESS, "permission denied"),
    C(MPI_ERR_AMODE, "invalid file access mode"),
    C(MPI_ERR_BAD_FILE, "invalid file name"),
    C(MPI_ERR_CONVERSION, "data conversion failed"),
    C(MPI_ERR_DUP_DATAREP, "data representation already defined"),
    C(MPI_ERR_FILE_EXISTS, "file exists"),
    C(MPI_ERR_FILE_IN_USE, "file in use"),
    C(MPI_ERR_FILE, "invalid file handle"),
    C(MPI_ERR_INFO, "invalid info object"),
    C(MPI_ERR_INFO_KEY, "info key too long"),
    C(MPI_ERR_INFO_VALUE, "info value too long"),
    C(MPI_ERR_INFO_NOKEY, "info key not defined"),
    C(MPI_ERR_IO, "I/O error"),
    C(MPI_ERR_NAME, "service name not published"),
    C(MPI_ERR_NO_MEM, "out of memory"),
    C(MPI_ERR_NOT_SAME, "arguments differ between processes"),
    C(MPI_ERR_NO_SPACE, "no space left"),
    C(MPI_ERR_NO_SUCH_FILE, "no such file"),
    C(MPI_ERR_PORT, "invalid port name"),
    C(MPI_ERR_QUOTA, "quota exceeded"),
    C(MPI_ERR_READ_ONLY, "file is read-only"),
    C(MPI_ERR_SERVICE, "invalid service name"),
    C(MPI_ERR_SPAWN, "could not spawn processes"),
    C(MPI_ERR_UNSUPPORTED_DATAREP, "unsupported data representation"),
    C(MPI_ERR_UNSUPPORTED_OPERATION, "unsupported operation"),
    C(MPI_ERR_WIN, "invalid window"),
    C(MPI_ERR_BASE, "invalid base address"),
    C(MPI_ERR_LOCKTYPE, "invalid lock type"),
    C(MPI_ERR_KEYVAL, "invalid attribute key"),
    C(MPI_ERR_RMA_CONFLICT, "conflicting RMA accesses"),
    C(MPI_ERR_RMA_SYNC, "RMA call outside its synchronisation"),
    C(MPI_ERR_SIZE, "invalid size"),
    C(MPI_ERR_DISP, "invalid displacement"),
    C(MPI_ERR_ASSERT, "invalid assert argument"),
    C(MPI_ERR_RMA_RANGE, "RMA target outside the window"),
    C(MPI_ERR_RMA_ATTACH, "memory cannot be attached"),
    C(MPI_ERR_RMA_SHARED, "memory cannot be shared"),
    C(MPI_ERR_RMA_FLAVOR, "wrong window flavor"),
    C(MPI_T_ERR_MEMORY, "MPI_T: out of memory"),
    C(MPI_T_ERR_NOT_INITIALIZED, "MPI_T: interface not initialised"),
    C(MPI_T_ERR_CANNOT_INIT, "MPI_T: interface cannot be initialised now"),
    C(MPI_T_ERR_INVALID_INDEX, "MPI_T: invalid index"),
    C(MPI_T_ERR_INVALID_ITEM, "MPI_T: invalid item index"),
    C(MPI_T_ERR_INVALID_HANDLE, "MPI_T: invalid handle"),
    C(MPI_T_ERR_OUT_OF_HANDLES, "MPI_T: no more handles"),
    C(MPI_T_ERR_OUT_OF_SESSIONS, "MPI_T: no more sessions"),
    C(MPI_T_ERR_INVALID_SESSION, "MPI_T: invalid session"),
    C(MPI_T_ERR_CVAR_SET_NOT_NOW, "MPI_T: control variable cannot be set now"),
    C(MPI_T_ERR_CVAR_SET_NEVER, "MPI_T: control variable cannot be set"),
    C(MPI_T_ERR_PVAR_NO_STARTSTOP, "MPI_T: performance variable cannot be started or stopped"),
    C(MPI_T_ERR_PVAR_NO_WRITE, "MPI_T: performance variable cannot be written"),
    C(MPI_T_ERR_PVAR_NO_ATOMIC, "MPI_T: performance variable cannot be read and reset atomically"),
    C(MPI_T_ERR_INVALID_NAME, "MPI_T: no variable of that name"),
    C(MPI_T_ERR_INVALID, "MPI_T: invalid use of the interface"),
    C(MPI_ERR_SESSION, "invalid session"),
    C(MPI_ERR_PROC_ABORTED, "peer process aborted"),
    C(MPI_ERR_VALUE_TOO_LARGE, "value too large to store"),
    C(MPI_T_ERR_NOT_SUPPORTED, "MPI_T: not supported"),
    C(MPI_ERR_ERRHANDLER, "invalid error handler"),
    C(MPI_T_ERR_NOT_ACCESSIBLE, "MPI_T: not accessible"),
    C(MPIX_ERR_PROC_FAILED, "process failed"),
    C(MPIX_ERR_PROC_FAILED_PENDING, "process failure left the request pending"),
    C(MPIX_ERR_REVOKED, "communicator revoked"),
    C(MPIX_ERR_EAGAIN, "resource temporarily unavailable"),
    C(MPIX_ERR_NOREQ, "no request available"),
};
#undef C
#define NCLASSES ((int)(sizeof classes / sizeof classes[0]))

static const struct cdn_err_class_info *class_info(int errclass)
{
    for (int i = 0; i < NCLASSES; i++)
        if (classes[i].errclass == errclass)
            return &classes[i];
    return NULL;
}

const char *cdn_err_class_name(int errclass)
{
    const struct cdn_err_class_info *c = class_info(errclass);
    return c ? c->name : NULL;
}

/* ---- messages attached to codes ---- */

struct ring_slot {
    int code;
    char msg[MPI_MAX_ERROR_STRING];
};

/* User classes and codes: entry i is the value CDN_ERR_USER_BASE + i. */
struct user_entry {
    int in_use;
    int is_class;
    int errclass;          /* for a code: its class */
    char *string;
};

static struct {
    pthread_mutex_t lock;
    unsigned serial;
    struct ring_slot ring[CDN_ERR_RING];
    struct user_entry user[CDN_ERR_USER_MAX];
    int nuser;             /* entries ever handed out (freed ones are reused) */
} E = {.lock = PTHREAD_MUTEX_INITIALIZER};

int cdn_err(int errclass, const char *fmt, ...)
{
    if (errclass < 0 || errclass > CDN_ERR_CLASS_MASK)
        return errclass;  /* user classes carry no message */
    pthread_mutex_lock(&E.lock);
    unsigned serial = E.serial % CDN_ERR_SERIAL_MAX + 1;
    E.serial = serial;
    int code = (int)((serial << CDN_ERR_CLASS_BITS) | (unsigned)errclass);
    struct ring_slot *s = &E.ring[serial % CDN_ERR_RING];
    s->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->msg, sizeof s->msg, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&E.lock);
    return code;
}

/* Copy the message filed for a predefined-class code into msg
 * (MPI_MAX_ERROR_STRING bytes); 0 when it has none or it was overwritten. */
static int ring_message(int code, char *msg)
{
    unsigned serial = (unsigned)code >> CDN_ERR_CLASS_BITS;
    int found = 0;
    if (serial != 0) {
        pthread_mutex_lock(&E.lock);
        struct ring_slot *s = &E.ring[serial % CDN_ERR_RING];
        if (s->code == code) {
            memcpy(msg, s->msg, MPI_MAX_ERROR_STRING);
            found = 1;
        }
        pthread_mutex_unlock(&E.lock);
    }
    return found;
}

int cdn_err_prefix(int code, const char *prefix)
{
    if (code <= 0 || code > MPI_ERR_LASTCODE)
        return code;  /* success, or a user code: no message of ours */
    char msg[MPI_MAX_ERROR_STRING];
    int cls = code & CDN_ERR_CLASS_MASK;
    return ring_message(code, msg) ? cdn_err(cls, "%s: %s", prefix, msg) : cdn_err(cls, "%s", prefix);
}

int cdn_err_unimplemented(const char *fname)
{
    return cdn_err(MPI_ERR_UNSUPPORTED_OPERATION,
                   "%s is not implemented in Cadence yet (mpiinfo --unimplemented lists "
                   "what is missing)", fname);
}

static struct user_entry *user_entry(int code)
{
    if (code < CDN_ERR_USER_BASE || code >= CDN_ERR_USER_BASE + E.nuser)
        return NULL;
    struct user_entry *u = &E.user[code - CDN_ERR_USER_BASE];
    return u->in_use ? u : NULL;
}

int cdn_err_class_of(int code)
{
    if (code >= 0 && code <= MPI_ERR_LASTCODE) {
        int cls = code & CDN_ERR_CLASS_MASK;
        return class_info(cls) ? cls : -1;
    }
    pthread_mutex_lock(&E.lock);
    struct user_entry *u = user_entry(code);
    int cls = u ? (u->is_class ? code : u->errclass) : -1;
    pthread_mutex_unlock(&E.lock);
    return cls;
}

int cdn_err_string(int code, char *buf)
{
    buf[0] = '\0';
    if (code >= 0 && code <= MPI_ERR_LASTCODE) {
        const struct cdn_err_class_info *c = class_info(code & CDN_ERR_CLASS_MASK);
        if (c == NULL)
            return -1;
        char msg[MPI_MAX_ERROR_STRING];
        if (ring_message(code, msg))
            snprintf(buf, MPI_MAX_ERROR_STRING, "%s (%s): %s", c->name, c->text, msg);
        else
            snprintf(buf, MPI_MAX_ERROR_STRING, "%s: %s", c->name, c->text);
        return 0;
    }
    pthread_mutex_lock(&E.lock);
    struct user_entry *u = user_entry(code);
    if (u != NULL)
        snprintf(buf, MPI_MAX_ERROR_STRING, "%s", u->string ? u->string : "");
    pthread_mutex_unlock(&E.lock);
    return u ? 0 : -1;
}

/* A fresh value while there are any; after that the lowest one freed by
 * MPI_Remove_error_class/code, so a removed value stays invalid as long as
 * possible and add/remove cycles never run out. */
static int add_user(int is_class, int errclass, int *out)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&E.lock);
    int i = E.nuser;
    if (i == CDN_ERR_USER_MAX)
        for (i = 0; i < CDN_ERR_USER_MAX && E.user[i].in_use; i++)
            ;
    if (i == CDN_ERR_USER_MAX) {
        rc = -1;
    } else {
        E.user[i] = (struct user_entry){.in_use = 1, .is_class = is_class, .errclass = errclass};
        *out = CDN_ERR_USER_BASE + i;
        if (i == E.nuser)
            E.nuser++;
    }
    pthread_mutex_unlock(&E.lock);
    return rc;
}

int cdn_err_add_class(int *errorclass)
{
    if (add_user(1, 0, errorclass) != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Add_error_class: all %d user error classes and "
                       "codes are in use", CDN_ERR_USER_MAX);
    return MPI_SUCCESS;
}

int cdn_err_add_code(int errorclass, int *errorcode)
{
    int known;
    if (errorclass >= 0 && errorclass <= CDN_ERR_CLASS_MASK) {
        known = class_info(errorclass) != NULL && errorclass != MPI_SUCCESS;
    } else {
        pthread_mutex_lock(&E.lock);
        struct user_entry *u = user_entry(errorclass);
        known = u != NULL && u->is_class;
        pthread_mutex_unlock(&E.lock);
    }
    if (!known)
        return cdn_err(MPI_ERR_ARG, "MPI_Add_error_code: %d is not an error class", errorclass);
    if (add_user(0, errorclass, errorcode) != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Add_error_code: all %d user error classes and "
                       "codes are in use", CDN_ERR_USER_MAX);
    return MPI_SUCCESS;
}

int cdn_err_add_string(int errorcode, const char *string)
{
    if (string == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Add_error_string: string is NULL");
    if (strlen(string) >= MPI_MAX_ERROR_STRING)
        return cdn_err(MPI_ERR_ARG, "MPI_Add_error_string: string of %zu characters is longer "
                       "than MPI_MAX_ERROR_STRING-1 (%d)", strlen(string), MPI_MAX_ERROR_STRING - 1);
    char *copy = strdup(string);
    if (copy == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Add_error_string: out of memory");
    pthread_mutex_lock(&E.lock);
    struct user_entry *u = user_entry(errorcode);
    if (u != NULL) {
        free(u->string);
        u->string = copy;
    }
    pthread_mutex_unlock(&E.lock);
    if (u == NULL) {
        free(copy);
        return cdn_err(MPI_ERR_ARG, "MPI_Add_error_string: %d is not a user-defined error class "
                       "or code (predefined ones cannot be changed)", errorcode);
    }
    return MPI_SUCCESS;
}

int cdn_err_remove_class(int errorclass)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&E.lock);
    struct user_entry *u = user_entry(errorclass);
    if (u == NULL || !u->is_class) {
        rc = -1;
    } else {
        for (int i = 0; i < E.nuser; i++)
            if (E.user[i].in_use && !E.user[i].is_class && E.user[i].errclass == errorclass)
                rc = -2;
        if (rc == MPI_SUCCESS) {
            free(u->string);
            *u = (struct user_entry){0};
        }
    }
    pthread_mutex_unlock(&E.lock);
    if (rc == -1)
        return cdn_err(MPI_ERR_ARG, "MPI_Remove_error_class: %d is not a user-defined error "
                       "class", errorclass);
    if (rc == -2)
        return cdn_err(MPI_ERR_ARG, "MPI_Remove_error_class: class %d still has error codes; "
                       "remove them first", errorclass);
    return MPI_SUCCESS;
}

int cdn_err_remove_code(int errorcode)
{
    pthread_mutex_lock(&E.lock);
    struct user_entry *u = user_entry(errorcode);
    int ok = u != NULL && !u->is_class;
    if (ok) {
        free(u->string);
        *u = (struct user_entry){0};
    }
    pthread_mutex_unlock(&E.lock);
    if (!ok)
        return cdn_err(MPI_ERR_ARG, "MPI_Remove_error_code: %d is not a user-defined error "
                       "code", errorcode);
    return MPI_SUCCESS;
}

int cdn_err_remove_string(int errorcode)
{
    pthread_mutex_lock(&E.lock);
    struct user_entry *u = user_entry(errorcode);
    if (u != NULL) {
        free(u->string);
        u->string = NULL;
    }
    pthread_mutex_unlock(&E.lock);
    if (u == NULL)
        return cdn_err(MPI_ERR_ARG, "MPI_Remove_error_string: %d is not a user-defined error "
                       "class or code", errorcode);
    return MPI_SUCCESS;
}

int cdn_err_last_used_code(void)
{
    pthread_mutex_lock(&E.lock);
    int last = E.nuser ? CDN_ERR_USER_BASE + E.nuser - 1 : MPI_ERR_LASTCODE;
    pthread_mutex_unlock(&E.lock);
    return last;
}

void cdn_err_finalize(void)
{
    pthread_mutex_lock(&E.lock);
    for (int i = 0; i < E.nuser; i++)
        free(E.user[i].string);
    memset(E.user, 0, sizeof E.user);
    E.nuser = 0;
    pthread_mutex_unlock(&E.lock);
}
