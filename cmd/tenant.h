/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tenant lifecycle commands (cmd/tenant.c):
 *   kubicle create NAME ...        kubicle list
 *   kubicle start NAME | --all     kubicle stop NAME
 *   kubicle delete NAME            kubicle kubeconfig NAME [--user U]
 *   kubicle snapshot NAME FILE     kubicle restore NAME FILE
 * Each returns the process exit status: 0, 1 (failed, message on stderr),
 * 2 (usage).
 */
#ifndef KB_CMD_TENANT_H
#define KB_CMD_TENANT_H

int cmd_create(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
/* `kubicle kubeconfig NAME ...` (the --data-dir form is cmd/users.c). */
int cmd_tenant_kubeconfig(int argc, char **argv);

#endif
