/* SPDX-License-Identifier: Apache-2.0 */
/* The kubicle version: printed by `kubicle version`, tags the image that
 * `kubicle manifest` names. */
#ifndef KB_CMD_VERSION_H
#define KB_CMD_VERSION_H

#define KUBICLE_VERSION "0.1.0"

#endif
